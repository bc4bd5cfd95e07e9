"""The fault matrix: each fault (an exception, KeyboardInterrupt, SystemExit, GeneratorExit,
a hang past a timeout, odd text, a huge output) strikes at each place it can (a tool, the
model call, the stream, the summarizer, the archive write, a subscriber). After each the
history is valid, the archive holds exactly the history and resumes to it, and the next
chat works. `bench/faults.py` prints the same matrix as a table.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nbagent import (
    Agent,
    ModelCallError,
    NbagentWarning,
    RetryPolicy,
    Settings,
    tool,
    validate_messages,
)
from nbagent.events import Event, ToolStarted
from nbagent.testing import (
    INTERRUPTED,
    Archive,
    ScriptedModel,
    ScriptedSummarizer,
    Step,
    calls,
    is_memory,
    is_summary,
    provider_error,
    read_records,
    replay,
    reply,
)
from tests.helpers import nine_sections

WINDOW = 4_096
TIMEOUT_S = 0.2  # the tool and summary timeouts of the matrix
HANG_S = 1.0  # how long a hanging tool or summarizer sleeps (past the timeout)
HUGE_CHARS = 1_000_000
# What `os.listdir` gives for a Latin-1 file name, NUL, right-to-left, zero-width, an
# emoji sequence, a combining accent, ANSI colour and a lone high surrogate.
ODD = (os.fsdecode(b"caf\xe9.csv") + " \x00 \u202eevil\u202c \u200b 👩\u200d🔬 e\u0301 "
       "\x1b[31mred\x1b[0m \ud800 end")
FAULTS = ("exception", "KeyboardInterrupt", "SystemExit", "GeneratorExit", "hang",
          "provider error", "odd text", "huge output")
PLACES = ("tool", "model call", "stream", "summarizer", "archive write", "subscriber")
Expected = type[BaseException] | None


def huge_text() -> str:
    line = "row-1234:4.25,7.5,revenue,ok\n"
    return line * (HUGE_CHARS // len(line))


def thrown(fault: str) -> BaseException:
    return {"exception": RuntimeError("an injected fault"), "KeyboardInterrupt":
            KeyboardInterrupt(), "SystemExit": SystemExit(3), "GeneratorExit": GeneratorExit(),
            "provider error": provider_error(503, "overloaded, connection reset")}[fault]


class Injector:
    """One fault, struck once at its place after `armed` is set."""

    def __init__(self, fault: str) -> None:
        self.fault = fault
        self.armed = False
        self.struck = 0

    def ready(self) -> bool:
        if not self.armed or self.struck:
            return False
        self.struck += 1
        return True

    def throw(self) -> None:
        """Raise the fault (the four exception faults) when it is its turn."""
        if self.ready():
            raise thrown(self.fault)


@dataclass
class Scenario:
    """An agent wired for one cell, and how to run the turn the fault strikes in."""

    agent: Agent
    injector: Injector
    turn: Callable[[Agent], Any]


@dataclass
class Outcome:
    """What one cell did, check by check (each check: "" when it held, else why not)."""

    fault: str
    place: str
    ended: str = ""  # how the struck turn ended: "returned" or the exception's name
    checks: dict[str, str] = field(default_factory=dict)

    @property
    def survived(self) -> bool:
        return bool(self.checks) and not any(self.checks.values())


# -- the places ----------------------------------------------------------------------------


def answer_by_rule(strike: Callable[[list[dict[str, Any]]], Step | None] = lambda m: None
                   ) -> Callable[[list[dict[str, Any]]], Step]:
    """The scripted model: "use the tool" calls `work`; a tool result gets "done"; else
    "fine". `strike` may replace any of these answers."""

    def respond(messages: list[dict[str, Any]]) -> Step:
        struck = strike(messages)
        if struck is not None:
            return struck
        last = messages[-1]
        if last["role"] == "user" and "use the tool" in str(last["content"]):
            return calls(("work", {}))
        if last["role"] == "tool":
            return reply("done")
        return reply("fine " + "and the revenue trend is flat " * 20)

    return respond


def build(model: Callable[[list[dict[str, Any]]], Step] | None = None, *,
          work: Callable[[], Any] = lambda: "42", **options: Any) -> Agent:
    """An agent on the scripted model with one tool, `work`, on a small window."""

    def run() -> Any:
        """Do the work."""
        return work()

    options.setdefault("summarize", ScriptedSummarizer(default=nine_sections()))
    options.setdefault("retry", RetryPolicy(max_attempts=3, sleep=lambda seconds: None))
    return Agent(model=ScriptedModel(default=model or answer_by_rule(), record=False),
                 tools=[tool(name="work")(run)], builtin_tools=False, namespace={},
                 settings=Settings(max_context_tokens=WINDOW, tool_timeout_s=TIMEOUT_S,
                                   summary_timeout_s=TIMEOUT_S), **options)


def use_the_tool(agent: Agent) -> Any:
    return agent.chat("please use the tool")


def at_tool(fault: str) -> Scenario:
    injector = Injector(fault)

    def work() -> Any:
        if fault == "hang" and injector.ready():
            time.sleep(HANG_S)
        if fault == "odd text" and injector.ready():
            return ODD
        if fault == "huge output" and injector.ready():
            return huge_text()
        injector.throw()
        return "42"

    return Scenario(build(work=work), injector, use_the_tool)


def at_model_call(fault: str) -> Scenario:
    """The second request of a turn (after a tool round) fails, or answers oddly."""
    injector = Injector(fault)

    def strike(messages: list[dict[str, Any]]) -> Step | None:
        if messages[-1]["role"] != "tool" or not injector.ready():
            return None
        if fault == "odd text":
            return Step(text=ODD, tool_calls=(("work", {"path": ODD}),))
        if fault == "huge output":
            return reply(huge_text())
        return Step(fail_after_text=thrown(fault))

    return Scenario(build(answer_by_rule(strike)), injector, use_the_tool)


def at_stream(fault: str) -> Scenario:
    """The reply breaks while it streams: the caller's `on_text` raises, or the stream
    carries odd or huge text and then the user interrupts."""
    injector = Injector(fault)

    def strike(messages: list[dict[str, Any]]) -> Step | None:
        if fault in ("odd text", "huge output") and injector.ready():
            text = ODD if fault == "odd text" else huge_text()
            return Step(text=text, fail_after_text=KeyboardInterrupt())
        if fault == "provider error" and injector.ready():  # the connection drops mid-reply
            return Step(text="half a reply", fail_after_text=thrown(fault))
        return None

    deltas: list[str] = []

    def on_text(delta: str) -> None:
        deltas.append(delta)
        if len(deltas) >= 3 and fault != "provider error":
            injector.throw()

    def turn(agent: Agent) -> Any:
        return agent.chat("tell me about the trend", on_text=on_text)

    return Scenario(build(answer_by_rule(strike)), injector, turn)


def grow(agent: Agent, injector: Injector, topic: str = "the revenue trend") -> Any:
    """Chat long messages until the compaction that meets the fault has run."""
    for number in range(40):
        result = agent.chat(f"question {number} on {topic}: " + "explain the trend " * 80)
        if injector.struck:
            return result
    raise AssertionError("no compaction reached the summarizer")


def at_summarizer(fault: str) -> Scenario:
    injector = Injector(fault)

    def summarize(messages: list[dict[str, Any]]) -> str:
        if fault == "odd text" and injector.ready():
            return nine_sections(f"sales_df read from {ODD}")
        if fault == "huge output" and injector.ready():
            return nine_sections(huge_text())
        injector.throw()
        return nine_sections()

    if fault == "hang":  # the timeout wraps the compaction model's calls, not `summarize=`
        def written(messages: list[dict[str, Any]]) -> Step:
            if injector.ready():
                time.sleep(HANG_S)
            return reply(nine_sections())

        agent = build(compact_model=ScriptedModel(default=written, record=False),
                      summarize=None)
    else:
        agent = build(summarize=ScriptedSummarizer(default=summarize, record=False))
    topic = f"sales_df read from {ODD}" if fault == "odd text" else "the revenue trend"
    return Scenario(agent, injector, lambda agent: grow(agent, injector, topic))


class FaultyArchive(Archive):
    """The real archive, but the fault lands as the assistant's tool call is written
    (a signal arriving mid-write)."""

    injector: Injector

    def write(self, kind: str, payload: Any, **options: Any) -> bool:
        if kind == "message" and payload["message"].get("tool_calls"):
            self.injector.throw()
        return super().write(kind, payload, **options)


def descriptors_of(path: Path) -> Iterator[int]:
    for name in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{name}") == str(path):
                yield int(name)
        except OSError:
            continue


def at_archive_write(fault: str) -> Scenario:
    injector = Injector(fault)

    def spill() -> Any:  # a huge output is kept whole in the archive
        return huge_text() if fault == "huge output" and injector.ready() else "42"

    agent = build(archive=False, work=spill)

    def open_archive() -> Archive:
        if fault not in ("KeyboardInterrupt", "SystemExit", "GeneratorExit"):
            return Archive(agent.session_id)
        archive = FaultyArchive(agent.session_id)
        archive.injector = injector
        return archive

    agent.session.attach_archive(open_archive)
    if fault == "exception":  # the disk fills up under the open archive
        def full_disk(agent: Agent) -> Any:
            assert agent.session.archive is not None and injector.ready()
            full = os.open("/dev/full", os.O_WRONLY)
            try:
                for descriptor in descriptors_of(agent.session.archive.path):
                    os.dup2(full, descriptor)
            finally:
                os.close(full)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                result = use_the_tool(agent)
            said = [str(w.message) for w in caught if issubclass(w.category, NbagentWarning)]
            assert len(said) == 1 and "cannot write its session archive" in said[0], said
            return result

        return Scenario(agent, injector, full_disk)
    if fault == "odd text":  # the user's own message holds it
        def odd(agent: Agent) -> Any:
            injector.ready()
            return agent.chat(f"please use the tool on {ODD}")

        return Scenario(agent, injector, odd)
    return Scenario(agent, injector, use_the_tool)


def at_subscriber(fault: str) -> Scenario:
    injector = Injector(fault)
    agent = build()

    def hook(event: Event) -> None:
        if isinstance(event, ToolStarted):
            injector.throw()

    agent.events.subscribe(hook)
    return Scenario(agent, injector, use_the_tool)


SCENARIOS: dict[str, Callable[[str], Scenario]] = {
    "tool": at_tool, "model call": at_model_call, "stream": at_stream,
    "summarizer": at_summarizer, "archive write": at_archive_write,
    "subscriber": at_subscriber,
}


@dataclass(frozen=True)
class Cell:
    fault: str
    place: str
    expected: Expected  # what leaves `chat`: None (it returns) or this exception

    @property
    def id(self) -> str:
        return f"{self.fault}@{self.place}"


def expected(fault: str, place: str) -> Expected:
    if fault in ("SystemExit", "GeneratorExit") and place == "tool":
        return None  # inside a tool it ends the tool (argparse, sys.exit), not the chat
    if fault in ("KeyboardInterrupt", "GeneratorExit"):
        return type(thrown(fault))
    if fault == "SystemExit":
        return SystemExit
    if fault == "exception" and place in ("model call", "stream"):
        return ModelCallError
    if fault == "provider error":  # transient: retried, and the turn goes on
        return None
    if place == "stream":  # odd or huge text streamed, then the user interrupted
        return KeyboardInterrupt
    return None


# A hang needs a timeout to end it: tools and summaries have one; a model call is ended by
# the provider's own timeout (an exception), an archive write or a subscriber by nothing.
# A provider error comes from a model: the chat's (its call or its stream) or the summarizer's.
CELLS = [Cell(fault, place, expected(fault, place)) for place in PLACES for fault in FAULTS
         if not (fault == "hang" and place not in ("tool", "summarizer"))
         and not (fault == "provider error" and place not in ("model call", "stream",
                                                              "summarizer"))
         and not (fault in ("odd text", "huge output", "hang") and place == "subscriber")]
OUTCOMES: dict[str, Outcome] = {}


# -- the invariants --------------------------------------------------------------------------


def check(outcome: Outcome, name: str, test: Callable[[], object]) -> None:
    try:
        result = test()
    except BaseException as error:  # noqa: B036  (a check must report, never abort)
        outcome.checks[name] = f"{type(error).__name__}: {str(error)[:300]}"
        return
    outcome.checks[name] = "" if result is None or result is True else str(result)[:300]


def run_cell(cell: Cell, directory: Path) -> Outcome:
    """Strike `cell`'s fault once and check every invariant after it."""
    os.environ["NBAGENT_DATA_DIR"] = str(directory)
    scenario = SCENARIOS[cell.place](cell.fault)
    agent, injector = scenario.agent, scenario.injector
    outcome = Outcome(cell.fault, cell.place)
    agent.chat("hello")  # the session exists before the fault
    injector.armed = True
    try:
        scenario.turn(agent)
        outcome.ended = "returned"
    except BaseException as error:  # noqa: B036  (whatever left the turn is the outcome)
        outcome.ended = type(error).__name__
        if cell.expected is None or not isinstance(error, cell.expected):
            outcome.checks["ends as expected"] = f"raised {type(error).__name__}: {error}"
    if "ends as expected" not in outcome.checks:
        outcome.checks["ends as expected"] = (
            "" if cell.expected is None or outcome.ended == cell.expected.__name__
            else f"returned instead of raising {cell.expected.__name__}")
    check(outcome, "fault struck", lambda: injector.struck == 1 or "it never struck")
    check(outcome, "history valid", lambda: valid(agent))
    check(outcome, "open calls answered", lambda: answered(agent, cell))
    check(outcome, "half-streamed reply kept", lambda: half_reply_kept(agent, cell))
    check(outcome, "archive holds the history", lambda: archived_as_history(agent, cell))
    check(outcome, "next chat works", lambda: next_chat(agent))
    check(outcome, "resume gives the same history", lambda: resumes(agent, cell))
    check(outcome, "odd text kept exactly", lambda: odd_text_kept(agent, cell))
    check(outcome, "huge output kept whole", lambda: huge_output_kept(agent, cell))
    agent.session.close()
    return outcome


def valid(agent: Agent) -> None:
    validate_messages(agent.history.messages)
    agent.history.check_ready()


def answered(agent: Agent, cell: Cell) -> str | None:
    """A call the fault stopped is answered, saying so; `sys.exit` in a tool ends the tool."""
    results = [str(m["content"]) for m in agent.history if m["role"] == "tool"]
    last = results[-1] if results else ""
    if cell.place == "tool" and cell.fault == "SystemExit":
        return None if last.startswith("Error: work exited") else f"last tool result {last!r}"
    stopped = cell.expected in (KeyboardInterrupt, SystemExit, GeneratorExit)
    if cell.place in ("tool", "subscriber") and stopped:
        return None if last == INTERRUPTED else f"last tool result {last[:80]!r}"
    return None


def half_reply_kept(agent: Agent, cell: Cell) -> str | None:
    """A reply the fault broke while it streamed stays, marked as cut."""
    if cell.place != "stream":
        return None
    if cell.fault == "provider error":  # retried: the broken start is gone, the answer whole
        texts = [str(m.get("content")) for m in agent.history if m["role"] == "assistant"]
        return None if texts[-1].startswith("fine") and not any(
            "half a reply" in t for t in texts) else f"replies {texts[-2:]}"
    kept = str(agent.history[-1].get("content"))
    expected = {"odd text": ODD, "huge output": huge_text()}.get(cell.fault, "fine and the")
    if agent.history[-1]["role"] == "assistant" and kept.startswith(expected) and \
            kept.endswith("[interrupted]"):
        return None
    return f"the history ends with {agent.history[-1]['role']}: {kept[:80]!r}"


def archived_messages(agent: Agent) -> list[dict[str, Any]]:
    assert agent.session.archive is not None
    return replay(agent.session.archive.path).messages


def archived_as_history(agent: Agent, cell: Cell) -> str | None:
    archived = archived_messages(agent)
    if cell.fault == "exception" and cell.place == "archive write":  # the disk is full:
        # everything up to the failure is there, in order, and it says why it stopped
        held = archived == agent.history.messages[:len(archived)]
        failed = agent.session.archive is not None and agent.session.archive.failed
        return None if held and failed else "the archive is not a prefix of the history"
    if archived != agent.history.messages:
        return f"archive has {len(archived)} messages, the history {len(agent.history)}"
    return None


def next_chat(agent: Agent) -> str | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NbagentWarning)  # a full disk warned once already
        result = agent.chat("are we fine?")
    valid(agent)
    return None if result.text.startswith("fine") else f"answered {result.text[:80]!r}"


def resumes(agent: Agent, cell: Cell) -> str | None:
    assert agent.session.archive is not None
    path = agent.session.archive.path
    agent.session.close()
    resumed = Agent.resume(path, model=ScriptedModel(default=reply("fine again")),
                           builtin_tools=False, namespace={},
                           settings=Settings(max_context_tokens=WINDOW),
                           summarize=ScriptedSummarizer(default=nine_sections()))
    try:
        if cell.fault == "exception" and cell.place == "archive write":
            expected_messages = agent.history.messages[:len(resumed.history)]
        else:
            expected_messages = agent.history.messages
        if resumed.history.messages != expected_messages:
            return "the resumed history differs"
        if resumed.chat("still there?").text != "fine again":
            return "the resumed session did not answer"
        valid(resumed)
    finally:
        resumed.session.close()
    return None


def odd_text_kept(agent: Agent, cell: Cell) -> str | None:
    if cell.fault != "odd text":
        return None
    path = Path(os.environ["NBAGENT_DATA_DIR"]) / "sessions" / f"{agent.session_id}.jsonl"
    path.read_bytes().decode("utf-8")  # the file itself is clean UTF-8
    messages = replay(path).messages
    if cell.place == "summarizer":  # the summarizer's notes, as the model will see them
        notes = [str(m["content"]) for m in messages if is_memory(m) or is_summary(m)]
        return None if any(f"sales_df read from {ODD}" in n for n in notes) else \
            "the odd notes are not in the archive"
    texts = [str(m.get("content")) + str(m.get("tool_calls")) for m in messages]
    return None if any(ODD in t for t in texts) else "the odd text is not in the archive"


def huge_output_kept(agent: Agent, cell: Cell) -> str | None:
    if cell.fault != "huge output" or cell.place not in ("tool", "archive write"):
        return None
    path = Path(os.environ["NBAGENT_DATA_DIR"]) / "sessions" / f"{agent.session_id}.jsonl"
    outputs = replay(path).outputs
    if huge_text() not in outputs.values():
        return "the full output is not in the archive"
    seen = [m["content"] for m in agent.history if m["role"] == "tool"]
    return None if all(len(s) < 20_000 for s in seen) else "the model saw the whole output"


# -- the tests -------------------------------------------------------------------------------


# Cells that do not survive yet: the reason names the fix (the test fails when it is fixed).
KNOWN_BUGS: dict[str, str] = {}


def params() -> list[Any]:
    return [pytest.param(cell, id=cell.id, marks=[pytest.mark.xfail(
        strict=True, reason=KNOWN_BUGS[cell.id])] if cell.id in KNOWN_BUGS else [])
        for cell in CELLS]


@pytest.mark.parametrize("cell", params())
def test_a_fault_leaves_a_valid_resumable_session(cell: Cell, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(tmp_path))
    outcome = run_cell(cell, tmp_path)
    OUTCOMES[cell.id] = outcome
    broken = {name: why for name, why in outcome.checks.items() if why}
    assert not broken, f"{cell.id} ended {outcome.ended}: {broken}"


def test_a_kernel_that_died_while_a_tool_ran_resumes_to_a_session_that_chats(
        tmp_path: Path) -> None:
    dying: list[Agent] = []

    def die() -> str:  # the kernel dies here: nothing after this reaches the archive
        dying[0].session.close()
        return "42"

    agent = build(work=die)
    dying.append(agent)
    agent.chat("hello")
    assert agent.session.archive is not None
    path = agent.session.archive.path
    with pytest.warns(NbagentWarning, match="cannot write its session archive"):
        use_the_tool(agent)
    resumed = Agent.resume(path, model=ScriptedModel(default=reply("fine again")),
                           builtin_tools=False, namespace={},
                           settings=Settings(max_context_tokens=WINDOW),
                           summarize=ScriptedSummarizer(default=nine_sections()))
    try:
        assert resumed.chat("still there?").text == "fine again"
        valid(resumed)
        answers = [m["content"] for m in resumed.history if m["role"] == "tool"]
        assert len(answers) == 1 and answers[0].startswith("Interrupted")
    finally:
        resumed.session.close()


def test_the_matrix_covers_every_fault_and_place_and_all_survived(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert {c.fault for c in CELLS} == set(FAULTS) and {c.place for c in CELLS} == set(PLACES)
    if len(OUTCOMES) < len(CELLS):
        pytest.skip("only part of the matrix ran")
    survived = sum(o.survived for o in OUTCOMES.values())
    known = sum(not o.survived for name, o in OUTCOMES.items() if name in KNOWN_BUGS)
    with capsys.disabled():
        print(f"\nfault matrix: {len(OUTCOMES)} faults injected, {survived} survived "
              f"({100 * survived // len(OUTCOMES)}%), {known} known bugs (xfail)")
    assert survived + known == len(CELLS)


@pytest.mark.parametrize("junk", ["", "Error: 529 overloaded",
                                  "## 1. Primary Request and Intent\nhalf a summary", ODD],
                         ids=["empty", "an error text", "half-formed", "odd text"])
def test_a_summarizer_that_writes_junk_never_breaks_the_chat(junk: str) -> None:
    agent = build(summarize=ScriptedSummarizer(default=junk))
    for number in range(12):
        agent.chat(f"question {number}: " + "explain the trend " * 80)
    valid(agent)
    assert archived_messages(agent) == agent.history.messages
    asked = [m for m in added_messages(agent) if m["role"] == "user"]
    assert len(asked) == 12  # every question is in the archive, whatever compaction did
    decisions = [d for d in agent.controller.decisions if d.action != "none"]
    assert decisions and all(d.reason for d in decisions)  # each says what happened
    history = agent.history.messages
    agent.session.close()
    resumed = Agent.resume(agent_path(agent), model=ScriptedModel(default=reply("fine")),
                           builtin_tools=False, namespace={})
    resumed.session.close()
    assert resumed.history.messages == history


def added_messages(agent: Agent) -> list[dict[str, Any]]:
    return [r["message"] for r in read_records(agent_path(agent)) if r["kind"] == "message"]


def agent_path(agent: Agent) -> Path:
    assert agent.session.archive is not None
    return agent.session.archive.path


def test_a_summarizer_down_for_good_never_blocks_the_chat() -> None:
    def measure() -> str:
        return "\n".join(f"row {i}: " + "4.25 " * 12 for i in range(40))

    agent = build(work=measure, summarize=ScriptedSummarizer(default=RuntimeError("down")))
    stops = [use_the_tool(agent).stop_reason for _ in range(40)]
    assert agent.controller.breaker_open  # the summaries stopped...
    assert stops == ["done"] * 40  # ...and the chat went on, compacted by the floor
    valid(agent)
