"""Tools from plain functions: `@tool` reads the name, description and argument
schema from the signature and docstring (pydantic builds and checks the schema),
and `run_tool` turns every outcome — a result, invalid arguments, an unknown
tool, an exception — into text for the model. Long results are capped on
arrival; the full text goes to an `OutputStore` the model can page back.
"""

from __future__ import annotations

import contextvars
import functools
import inspect
import json
import re
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, overload

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from ...engine._events import EventStream, OutputStored
from ...engine._output import cap_output
from .._asking import USER_CLOCK, QuestionDesk, answered_here
from ._paging import MAX_PAGE_CHARS, PAGE, fitting_prefix
from ._text import as_text

# What a tool raises that still ends the turn (the loop answers its calls "interrupted"):
# the user's interrupt only. SystemExit, GeneratorExit and any BaseException of the
# tool's own end only the tool, as an error result the model reads.
ENDS_THE_TURN = (KeyboardInterrupt,)


class HandOver(Exception):  # not an error: the work passes to the user
    """Raised by a tool whose work passes to the user (code taken as a cell to edit and
    run): `result` is what the model reads, and the turn ends after this round's calls,
    whatever the model would have done next."""

    def __init__(self, result: str) -> None:
        super().__init__(result)
        self.result = result

_ARG_LINE = re.compile(r"^\s{2,}(\w+)\s*(?:\([^)]*\))?:\s*(.+)$")


@dataclass
class Tool:
    """A function the model can call. `paging` tools return bounded pages and are never capped."""

    name: str
    description: str
    function: Callable[..., Any]
    arguments: type[BaseModel]
    max_output_chars: int | None = None
    paging: bool = False

    @functools.cached_property
    def schema(self) -> dict[str, Any]:
        """The OpenAI-format tool schema sent with each request (built once)."""
        parameters = self.arguments.model_json_schema()
        parameters.pop("title", None)
        for prop in parameters.get("properties", {}).values():
            prop.pop("title", None)
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": parameters,
            },
        }

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.function(*args, **kwargs)


def argument_help(function: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The description (text before `Args:`) and per-argument help from a docstring."""
    doc = inspect.getdoc(function) or ""
    description, _, rest = doc.partition("\nArgs:")
    help_for: dict[str, str] = {}
    for line in rest.splitlines():
        match = _ARG_LINE.match("  " + line if not line.startswith("  ") else line)
        if match:
            help_for[match.group(1)] = match.group(2).strip()
    return " ".join(description.split()), help_for


@overload
def tool(function: Callable[..., Any], /) -> Tool: ...


@overload
def tool(
    *, name: str | None = None, max_output_chars: int | None = None, paging: bool = False
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    function: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    max_output_chars: int | None = None,
    paging: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a typed Python function a tool the agent can offer the model.

        @tool
        def describe(name: str, rows: int = 5) -> str:
            '''Describe a DataFrame in the notebook.

            Args:
                name: the variable holding the DataFrame.
                rows: how many rows of its head to show.
            '''

    Args:
        name: the tool's name (default: the function's).
        max_output_chars: this tool's cap on arrival (default: the session's).
        paging: the tool returns bounded pages itself; never cap its output.
    """

    def build(fn: Callable[..., Any]) -> Tool:
        description, help_for = argument_help(fn)
        fields: dict[str, Any] = {}
        for parameter in inspect.signature(fn).parameters.values():
            if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
                raise TypeError(f"tool {fn.__name__}: *args and **kwargs cannot be described")
            annotation = (
                parameter.annotation if parameter.annotation is not parameter.empty else Any
            )
            default = ... if parameter.default is parameter.empty else parameter.default
            fields[parameter.name] = (
                annotation,
                Field(default, description=help_for.get(parameter.name)),
            )
        model = create_model(
            f"{fn.__name__}_arguments", __config__=ConfigDict(extra="forbid"), **fields
        )
        return Tool(
            name or fn.__name__, description or fn.__name__, fn, model, max_output_chars, paging
        )

    return build(function) if function is not None else build


def as_tool(candidate: Tool | Callable[..., Any]) -> Tool:
    return candidate if isinstance(candidate, Tool) else tool(candidate)


@dataclass
class OutputStore:
    """Full tool outputs by reference (the tool call id), for `read_output` to page back.

    Each output is announced on the session's event stream (the archive keeps it).
    The newest `keep` outputs stay in memory; older ones are dropped once `loader`
    can fetch them back (from the session archive), so RAM does not grow with a
    long session. `loadable` says whether it can now (a session's archive may be
    attached after the store is built); None: whenever there is a loader.
    """

    outputs: dict[str, str] = field(default_factory=dict)
    events: EventStream | None = None
    loader: Callable[[str], str | None] | None = None
    keep: int = 64
    loadable: Callable[[], bool] | None = None

    def put(self, ref: str, text: str) -> None:
        self.outputs[ref] = text
        if self.events is not None:
            self.events.emit(OutputStored(ref, text))  # archived now, where there is one
        if self.loader is None or (self.loadable is not None and not self.loadable()):
            return  # nothing could read a dropped output back: keep them all
        while len(self.outputs) > self.keep:
            del self.outputs[next(iter(self.outputs))]

    def get(self, ref: str) -> str | None:
        if ref in self.outputs:
            return self.outputs[ref]
        return self.loader(ref) if self.loader is not None else None

    def page(self, ref: str, offset: int = 0, limit: int = MAX_PAGE_CHARS) -> str:
        """A page of a stored output: at most `limit` characters from `offset`, and never
        more than one page (`PAGE`: characters, bytes and lines) whatever `limit` says."""
        text = self.get(ref)
        if text is None:
            known = ", ".join(list(self.outputs)[-5:]) or "none"
            return f"No stored output {ref!r} (recent: {known})."
        offset = min(max(0, offset), len(text))
        window = text[offset: offset + PAGE.clamp_chars(limit)]
        end = offset + fitting_prefix(window, PAGE)
        more = f"; next offset {end}" if end < len(text) else "; end of output"
        return f"[characters {offset:,}–{end:,} of {len(text):,}{more}]\n{text[offset:end]}"


def run_tool(
    tools: Mapping[str, Tool],
    name: str,
    arguments: str,
    *,
    call_id: str,
    store: OutputStore,
    default_cap: int,
    timeout: float | None = None,
) -> tuple[str, bool, int]:
    """Run one tool call; return (text for the model, whether it succeeded, the length
    of the full output before any cap).

    Never raises for the model's mistakes or the tool's failures: they become
    error results the model can read and act on.
    """
    chosen = tools.get(name)
    if chosen is None:
        return f"Error: there is no tool named {name!r}. Available: {', '.join(tools)}.", False, 0
    try:
        raw = json.loads(arguments) if arguments.strip() else {}
    except json.JSONDecodeError as error:
        return f"Error: the arguments for {name} are not valid JSON ({error.msg}).", False, 0
    if not isinstance(raw, dict) or "_invalid_arguments" in raw:
        return f"Error: the arguments for {name} must be a JSON object.", False, 0
    try:
        validated = chosen.arguments.model_validate(raw)
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in error.errors()
        )
        return f"Error: invalid arguments for {name}: {problems}.", False, 0
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"nbagent-{name}")
    # The tool's questions to the user are asked on this thread, the one the user's
    # interrupt reaches (`_asking`); once this call is over, any still to come are refused.
    with answered_here() as desk:
        try:
            future = pool.submit(contextvars.copy_context().run, _call_and_show,
                                 chosen.function, dict(validated))
            if not _finished(future, timeout, desk):  # the thread cannot be killed; the
                return (f"Error: {name} did not finish within {timeout:g} s and was "
                        "abandoned.", False, 0)  # chat moves on
            failure = future.exception()
        finally:
            pool.shutdown(wait=False)
    if failure is None:
        text = future.result()
    elif isinstance(failure, (*ENDS_THE_TURN, HandOver)):  # the user's interrupt, or a
        raise failure  # hand-over, ends the turn (the loop gives the calls their results)
    else:
        return _failure_text(name, failure), False, 0
    if chosen.paging:
        return text, True, len(text)
    cap = chosen.max_output_chars or default_cap
    if len(text) > cap:
        store.put(call_id, text)
        return cap_output(text, cap, ref=call_id), True, len(text)
    return text, True, len(text)


def _finished(future: Future[str], timeout: float | None, desk: QuestionDesk) -> bool:
    """Whether the call ended within `timeout` seconds of its own work, its questions
    answered meanwhile (`desk`): time the user spent answering a question it asked (an
    approval) is added to the limit."""
    started, asked = time.monotonic(), USER_CLOCK.seconds()
    while True:
        if timeout is None:
            left = None
        else:
            left = started + timeout + (USER_CLOCK.seconds() - asked) - time.monotonic()
            if left <= 0:
                return future.done()
        if desk.wait(future, left):
            return True


class _ShowFailed(Exception):
    """The tool returned a value whose conversion to text raised `cause`."""

    def __init__(self, kind: str, cause: BaseException) -> None:
        super().__init__(kind)
        self.kind, self.cause = kind, cause


def _call_and_show(function: Callable[..., Any], arguments: dict[str, Any]) -> str:
    """Run the tool and turn its value into text, both in the tool's thread (a slow or
    failing `__str__` is the tool's, under the same timeout)."""
    value = function(**arguments)
    try:
        return as_text(value)
    except ENDS_THE_TURN:
        raise
    except BaseException as error:  # noqa: B036 -- whatever the conversion raises
        raise _ShowFailed(type(value).__name__, error) from error


def _failure_text(name: str, failure: BaseException) -> str:
    """The error result the model reads for a tool that raised or exited."""
    if isinstance(failure, _ShowFailed):
        cause = failure.cause
        return (f"Error: {name} returned a {failure.kind} that cannot be shown as text "
                f"({type(cause).__name__}: {_message(cause)}).")
    if isinstance(failure, SystemExit):  # sys.exit or argparse ends the tool, not the chat
        return f"Error: {name} exited (SystemExit {failure.code!r})."
    message = _message(failure)
    return f"Error: {name} raised {type(failure).__name__}" + (f": {message}" if message else "")


def _message(error: BaseException) -> str:
    """An exception's text; an exception whose own `__str__` raises is named by its type."""
    try:
        return str(error)
    except BaseException:  # noqa: B036 -- a broken __str__ on the error itself
        return f"(a {type(error).__name__} whose message cannot be shown)"
