"""The embedded model as a chat model: a GGUF on llama.cpp's OpenAI-compatible server,
reached through litellm, with messages adapted to its chat template, its tool rounds
bounded, and its exact token counts taken in process (`PromptCounter`). The server
process itself is `_local_server`."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar, Protocol

from ...engine import _figures as figures
from ...engine._exceptions import LocalModelError
from ...engine._questions import SummaryCost
from ..providers._errors import classify_error
from ._chat_format import TOOL_CALLING_FORMAT
from ._llm import Completion, LiteLLMModel
from ._local_messages import Message, adapt_messages, tool_rounds_this_turn
from ._local_terms import DECODING as DECODING  # the server's model reads them
from ._local_terms import SUMMARY_TOKENS as SUMMARY_TOKENS  # nbagent.local's
from ._local_terms import asked_for, local_summary_cost, summary_tokens
from ._prompt_counter import PromptCounter
from ._tool_prompt import tools_text

REPLY_TOKENS = 512  # Settings.local_max_tokens' default: room for a chat answer
TOOL_ROUNDS_SMALL = 1  # a 135M model makes one useful call, then loops on made-up ones
TOOL_ROUNDS = 4
READING = "the local model is reading the prompt ({tokens})…"  # `_figures.tokens`
STOPPED_MID_REPLY = ("the local model's server stopped while answering ({how}) and was "
                     "restarted; ask again")
ENDED_ELSEWHERE = -1000  # what `died` says of a server another process started: no exit code


def exit_words(code: int) -> str:
    """How a server ended, in words: its exit code, when this process could read one."""
    return "started by another kernel" if code == ENDED_ELSEWHERE else f"exit code {code}"
StatusCallback = Callable[[str], None]


class KeptAlive(Protocol):
    """The server process a model's requests go to (`LocalServer`), as the model uses it."""

    @property
    def base_url(self) -> str: ...

    def ensure_running(self, on_status: StatusCallback | None = None) -> bool: ...

    def died(self, within: float = 0.0) -> int | None: ...


@dataclass
class LocalModel(LiteLLMModel):
    """A model on the embedded server: messages adapted to its chat template, tools shown
    to it (`tool_choice="auto"` unless the caller says otherwise), its window, reply cap and
    exact token counts known.

    Tool use follows the chat handler: with ours (`_chat_handler`) the model itself chooses
    between its tools and an answer, in one streamed generation; after `tool_rounds` rounds
    of calls in one turn it answers from what the tools returned.

    With its `server`, each request first checks the process is alive (a poll, no
    request) and restarts it if it died, saying so through `on_status`.
    """

    # its server refuses a prompt over its window (never cuts it silently), and its prompt
    # shows the tools only at a turn's first request: a usage that shrinks is no cut
    cuts_prompts: ClassVar[bool] = False
    counter: PromptCounter | None = field(default=None, repr=False, compare=False)
    tool_rounds: int = TOOL_ROUNDS
    skips: frozenset[str] = frozenset()  # tools shown only when a turn names them
    # the bundled small model hides the built-ins unless named (`_local_terms`): an agent
    # given this model puts their names in `skips` (`agent/_model_traits.told_builtins`)
    hides_builtins: bool = False
    server: KeptAlive | None = field(default=None, repr=False, compare=False)
    on_status: StatusCallback | None = field(default=None, repr=False, compare=False)
    _counts: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def count_text(self) -> Callable[[str], int] | None:
        """The model's own text counter (its GGUF's tokenizer, in this process), for the
        session's per-message counts; None if this model was made without it."""
        return self.counter.count_text if self.counter is not None else None

    @property
    def calls_tools_itself(self) -> bool:
        """True when the server turns the model's own choice into tool calls."""
        return self.counter is not None and self.counter.chat_format == TOOL_CALLING_FORMAT

    def choose_tools(self, messages: list[Message], tools: list[dict[str, Any]],
                     tool_choice: str | dict[str, Any] | None) -> str | dict[str, Any] | None:
        """The `tool_choice` sent for a request (None when no tools are offered)."""
        if not tools:
            return None
        if tool_choice is None:
            spent = tool_rounds_this_turn(messages) >= self.tool_rounds
            return "none" if spent else "auto"
        return "auto" if tool_choice == "required" else tool_choice  # the handler knows no
        # "required"; its automatic choice is the closest

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None] | None,
                 tool_choice: str | dict[str, Any] | None = None) -> Completion:
        # One streamed request whether the model calls a tool or answers: our chat
        # handler streams an answer from its first token and holds back only text that
        # begins like a tool call (then sent as the call).
        tools = self.offered(tools, messages, tool_choice)
        choice = self.choose_tools(messages, tools, tool_choice)
        return self._send(adapt_messages(messages), tools, choice, on_text)

    def offered(self, tools: Sequence[dict[str, Any]], messages: Sequence[Message] = (),
                tool_choice: str | dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """The tools this model is shown: all but its `skips`, and of those the ones this
        turn asks for by name (`asked_for`: "run run_code on it" offers run_code)."""
        asked = asked_for(messages, tool_choice) if self.skips else set()
        return [t for t in tools if (name := t.get("function", t).get("name")) not in self.skips
                or name in asked]

    def tool_prompt(self, tools: Sequence[dict[str, Any]]) -> str | None:
        """The text `tools` add to this model's prompt: the lean list our chat handler
        puts in the system message (what `%context` counts, not the JSON schemas); None
        under another chat format (its own rendering: the schemas are counted)."""
        return tools_text(self.offered(tools)) if self.calls_tools_itself else None

    @property
    def summary_cost(self) -> SummaryCost:
        """What one summary costs this model (the compaction ladder weighs a call by it)."""
        return local_summary_cost(self.max_output)

    def for_summaries(self) -> LocalModel:
        """This model as the summarizer calls it: replies bounded at `summary_tokens`."""
        bound = summary_tokens(self.max_output)
        return replace(self, options={**self.options, "max_tokens": bound}, max_output=bound)

    def _send(self, adapted: list[Message], tools: list[dict[str, Any]],
              choice: str | dict[str, Any] | None,
              on_text: Callable[[str], None] | None) -> Completion:
        shown = tools if choice not in (None, "none") else []
        prompt = self._prompt_tokens(adapted, shown, choice)
        if prompt is not None and self.on_status is not None:
            # llama.cpp's server gives no sign while it reads a prompt: say how long it is
            self.on_status(READING.format(tokens=figures.tokens(prompt)))
        window = self.context_window
        if on_text is not None and prompt is not None and window and prompt >= window:
            # The server checks the prompt's size only once a stream has begun: its error
            # then just ends the stream, which reads as an empty answer. Unstreamed, the same
            # request gets the real "context length exceeded" error.
            on_text = None
        completion = self._request(adapted, shown, on_text=on_text, tool_choice=choice)
        if on_text is None:
            return completion
        if completion.finish_reason is None and not completion.message.get("content") and not (
                completion.message.get("tool_calls")):
            # a stream cut short by a server-side error: ask again to hear the error itself
            return self._request(adapted, shown, on_text=None, tool_choice=choice)
        # llama-cpp-python's server streams no usage; what litellm puts there is its own
        # estimate (tiktoken's count of the messages), not the server's
        return replace(completion, usage=None)

    def _request(self, adapted: list[Message], shown: list[dict[str, Any]], *,
                 on_text: Callable[[str], None] | None,
                 tool_choice: str | dict[str, Any] | None) -> Completion:
        """One request to the server, alive: restarted first if it had died; if it dies
        during the request, restarted and (when nothing was streamed yet) asked again."""
        served = self.server
        if served is None:
            return super().complete(adapted, shown, on_text=on_text, tool_choice=tool_choice)
        self._keep_alive(served)
        streamed: list[str] = []

        def relay(text: str) -> None:
            streamed.append(text)
            if on_text is not None:
                on_text(text)

        try:
            return super().complete(adapted, shown, on_text=relay if on_text else None,
                                    tool_choice=tool_choice)
        except Exception as error:
            if classify_error(error) != "transient":
                raise
            code = served.died(within=1.0)  # a reset connection: did the process end?
            if code is None:
                raise
            self._keep_alive(served)
            if streamed:
                raise LocalModelError(STOPPED_MID_REPLY.format(how=exit_words(code))) from None
        return super().complete(adapted, shown, on_text=on_text, tool_choice=tool_choice)

    def _keep_alive(self, served: KeptAlive) -> None:
        if served.ensure_running(self.on_status):
            self.api_base = served.base_url

    def _prompt_tokens(self, adapted: list[Message], shown: list[dict[str, Any]],
                       choice: str | dict[str, Any] | None) -> int | None:
        """The request's prompt tokens, as the server will count them (None: no counter)."""
        if self.counter is None:
            return None
        return self.counter.count_prompt(adapted, shown, choice)

    # -- counting --------------------------------------------------------------------------

    def count_request(self, messages: list[Message], tools: Sequence[dict[str, Any]] = (),
                      tool_choice: str | dict[str, Any] | None = None) -> int:
        """The prompt tokens the server will count for `complete(messages, tools, ...)`:
        the chat template's framing of every message, the tool prompt the handler puts in
        the system message, all through the model's own tokenizer. No network call."""
        offered = self.offered(tools, messages, tool_choice)
        choice = self.choose_tools(messages, offered, tool_choice)
        shown = offered if choice not in (None, "none") else []
        return self._counter().count_prompt(adapt_messages(messages), shown, choice)

    def message_tokens(self, message: Message) -> int:
        """What one message adds to a request (its framing included) — for a per-message
        cache. A tool result is counted as the user message it is sent as."""
        key = json.dumps(message, sort_keys=True, default=str)
        cache = self._cache()
        if key not in cache:
            base = [{"role": "system", "content": ""}]
            shown = message if message["role"] != "tool" else {
                "role": "user", "content": f"Result of the tool:\n{message.get('content') or ''}"}
            with_it = self.count_request([*base, shown], [], "none")
            cache[key] = with_it - self.count_request(base, [], "none")
        return cache[key]

    def tools_tokens(self, tools: list[dict[str, Any]]) -> int:
        """What offering `tools` adds to a request (the handler's tool prompt), within a
        token (the tokenizer may merge across the system message's end)."""
        if not tools:
            return 0
        key = hashlib.sha1(json.dumps(tools, sort_keys=True, default=str).encode()).hexdigest()
        cache = self._cache()
        if key not in cache:
            base = [{"role": "system", "content": "You help."}, {"role": "user", "content": "Hi"}]
            cache[key] = self.count_request(base, tools, "auto") - self.count_request(
                base, [], "none")
        return cache[key]

    def _cache(self) -> dict[str, int]:
        if len(self._counts) > 8192:
            self._counts.clear()
        return self._counts

    def _counter(self) -> PromptCounter:
        if self.counter is None:
            raise LocalModelError("this local model was made without its GGUF's tokenizer")
        return self.counter
