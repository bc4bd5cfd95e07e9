"""The fidelity sessions through the real agent against a server that misbehaves as real ones
do (bench/fidelity.py's paths past its controller-only ones): the agent's loop, its token
tracker and window learning, its tool sizing and L4 room, with a model standing in for the
server that replies from the session's script and reports usage from its own count of each
request (a tokenizer 10% leaner than nbagent's estimate).

    told above      the window told twice the server's; the server cuts an over-long
                    prompt to fit its context and answers 200 (Ollama's newer runner)
    under-reports   the window told right; the server's usage counts only the tokens it
                    had not cached (some Ollama versions)
    pastes 4,096    a 4,096-token window, the built-in tools offered too; each ask but the
                    first and the last carries a 1–3 KB paste; the server refuses a prompt
                    over it with OpenAI's overflow text
"""

from __future__ import annotations

import json
import random
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from nbagent import Agent, RetryPolicy, Settings, Usage, tool
from nbagent.engine import count_message_tokens, count_tools_tokens, is_plain_user
from nbagent.events import Compacted
from nbagent.testing import provider_error

Message = dict[str, Any]
SERVER_RATIO = 0.9  # the server's tokens per token of nbagent's estimate
SERVER_PATHS = {
    "told-above": "told twice the server's window; it cuts to fit and answers",
    "under-reports": "told right; the server's usage counts only what it had not cached",
    "pastes-4096": "4,096 tokens, 1–3 KB pastes; the server refuses past it",
}
PASTE_COLUMNS = ["region", "units", "unit_price", "revenue", "store"]


@dataclass
class Served:
    """What the server saw: requests, those it cut (before / after the window was found
    out) or refused, and the turns the agent sent or refused."""

    requests: int = 0
    cut: list[int] = field(default_factory=list)  # request numbers
    refused: int = 0
    found_at: int | None = None  # the request after which the session kept within it
    turns: int = 0
    turns_sent: int = 0
    window: str = ""


class Server:
    """The model the agent calls: each reply the session's next assistant message for the
    current round (found from the tool results after the latest ask, so a question asked
    again gets the same reply), with the usage this server reports."""

    name = "bench/server"  # a model litellm does not know: a server of one's own
    context_window: int | None = None
    max_output: int | None = None

    def __init__(self, window: int, how: str) -> None:
        self.window, self.how = window, how
        self.round: list[Message] = []
        self.served = Served()
        self._previous: list[Message] = []

    def complete(self, messages: list[Message], tools: list[dict[str, Any]], *,
                 on_text: Callable[[str], None] | None = None,
                 tool_choice: Any = None) -> Any:
        from nbagent.agent.models._llm import Completion

        self.served.requests += 1
        size = round(SERVER_RATIO * (sum(count_message_tokens(m) for m in messages)
                                     + count_tools_tokens(tools) + 3))
        read = size
        if size > self.window:
            if self.how == "refuse":
                self.served.refused += 1
                raise provider_error(400, f"This model's maximum context length is "
                                     f"{self.window} tokens. However, your messages resulted "
                                     f"in {size} tokens. Please reduce the length of the "
                                     "messages.")
            self.served.cut.append(self.served.requests)
            read = self.window
        if self.how == "under":
            shared = 0
            for old, new in zip(self._previous, messages, strict=False):
                if old != new:
                    break
                shared += count_message_tokens(new)
            read = max(1, size - round(SERVER_RATIO * shared))
        self._previous = list(messages)
        ask = max(i for i, m in enumerate(messages) if is_plain_user(m))
        done = sum(1 for m in messages[ask + 1:] if m["role"] == "tool")
        replies = [m for m in self.round if m["role"] == "assistant"]
        reply = dict(replies[min(done, len(replies) - 1)])
        return Completion(reply, Usage(input_tokens=read, output_tokens=20), None,
                          "tool_calls" if reply.get("tool_calls") else "stop")


def _tools(rounds: Sequence[Any]) -> list[Any]:
    """The session's tools, answering each call with the output the session recorded."""
    outputs: dict[tuple[str, str], deque[str]] = {}
    for round_ in rounds:
        calls = {c["id"]: c["function"] for m in round_.messages
                 for c in m.get("tool_calls") or ()}
        for message in round_.messages:
            if message["role"] == "tool":
                function = calls[message["tool_call_id"]]
                code = str(json.loads(function["arguments"]).get("code", ""))
                outputs.setdefault((function["name"], code), deque()).append(
                    str(message["content"]))

    def answer(name: str, code: str) -> str:
        queue = outputs.get((name, code))
        return queue.popleft() if queue else "(no output)"

    @tool(name="python")
    def python(code: str) -> str:
        """Run Python code in the notebook."""
        return answer("python", code)

    @tool(name="run_code")
    def run_code(code: str, explanation: str = "") -> str:
        """Run Python code in the notebook, shown to the user."""
        return answer("run_code", code)

    return [python, run_code]


def with_pastes(rounds: Sequence[Any], seed: int) -> list[Any]:
    """The rounds with a 1–3 KB paste after each ask but the first and the last (the probes
    read those whole) and those whose code runs."""
    from dataclasses import replace

    rng = random.Random(seed)
    out = []
    for index, round_ in enumerate(rounds):
        if 0 < index < len(rounds) - 1 and not round_.facts:
            ask = dict(round_.messages[0])
            ask["content"] = f"{ask['content']}\n{_paste(rng, rng.randint(1_000, 3_000))}"
            round_ = replace(round_, messages=[ask, *round_.messages[1:]])
        out.append(round_)
    return out


def _paste(rng: random.Random, size: int) -> str:
    columns = rng.sample(PASTE_COLUMNS, 4)
    lines = ["      " + "  ".join(f"{c:>12}" for c in columns)]
    while sum(len(line) + 1 for line in lines) < size:
        lines.append(f"{len(lines):<6}" + "  ".join(f"{rng.uniform(0, 9_999):>12.2f}"
                                                     for _ in columns))
    return "\n".join(lines)


def run_agent(session: Any, summarize: Callable[[list[Message]], Any], *, window: int,
              path: str, run: Any, checker: Callable[..., Callable[[Any, str], None]],
              system: Message) -> Served:
    """`session` through a real `Agent` against `Server` on `path` (`SERVER_PATHS`); the
    run's fidelity checks (`checker`, bench/fidelity.py's) after every compaction."""
    told = {"told-above": 2 * window, "under-reports": window, "pastes-4096": 4_096}[path]
    holds = 4_096 if path == "pastes-4096" else window
    how = {"told-above": "cut", "under-reports": "under", "pastes-4096": "refuse"}[path]
    rounds = with_pastes(session.rounds, session.seed) if path == "pastes-4096" else \
        session.rounds
    server = Server(holds, how)
    # the pastes path offers the built-ins too, as a notebook session does (their schemas
    # took a third of a 4,096 window before they were sized to it)
    agent = Agent(model=server, tools=_tools(rounds), builtin_tools=path == "pastes-4096",
                  namespace={},
                  system=str(system["content"]), archive=False,
                  settings=Settings(max_context_tokens=told, notebook_context=False),
                  retry=RetryPolicy(sleep=lambda s: None), summarize=summarize)
    check = checker(run, agent.history, rounds[0].messages[0]["content"])
    latest = {"ask": ""}

    def on_event(event: object) -> None:
        if isinstance(event, Compacted):
            check(event.decision, latest["ask"])

    agent.events.subscribe(on_event)
    served = server.served
    for round_ in rounds:
        server.round = round_.messages
        latest["ask"] = round_.messages[0]["content"]
        before = agent.window().source
        result = agent.chat(latest["ask"])
        served.turns += 1
        served.turns_sent += result.stop_reason != "blocked"
        if served.found_at is None and agent.window().source != before and \
                agent.window().source.startswith("learned"):
            served.found_at = served.requests
        run.peak_tokens = max(run.peak_tokens, agent.context_state().tokens)
        run.produced.extend(round_.facts)
    check(agent.compact(focus="keep the column names, the file paths and every decision"),
          rounds[-1].messages[0]["content"])
    run.refused = served.refused + len(served.cut)
    run.trigger = agent.context_state().thresholds.auto_compact
    run.tokens_after, run.final = agent.context_state().tokens, agent.history.messages
    window_now = agent.window()
    served.window = f"{window_now.raw_window:,} ({window_now.source.split(':')[0]})"
    return served
