"""A delegated task — a branch of the session (the `delegate` tool): the model hands a
bounded task and a briefing of its data to a sub-agent with its own history, window and
compaction (a `Session` of its own, so its own controller), on the same model or the one
`delegate_model` names, with the same tools except the session's doors (built-ins made
anew over its own output store; the user's and the MCP servers' as they are, so its code
runs and MCP calls ask the user exactly as the main agent's do) and the same loop
(`run_chat`). Its transcript reaches the session's archive message by message, its steps
the session's stream (the chat cell's line), its cost and tokens the session's; only its
bounded report returns. A turn that ends without it — an interrupt, the tool's time
limit — stops it (`BranchStops`), each history left valid.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from ..engine import _figures as figures
from ..engine._events import (
    Compacted,
    EventStream,
    MessageAdded,
    OutputStored,
    Retrying,
    Status,
    ToolFinished,
    ToolStarted,
)
from ..engine._exceptions import NbagentError
from ..engine._output import cap_output, output_cap
from ..engine._thresholds import Limits
from . import _texts as texts
from ._branch_events import Branch, BranchMessage, BranchProgress, BranchStarted
from ._loop import run_chat
from ._model_side import AgentModel
from ._model_traits import told_builtins
from ._session import Session
from ._settings import Settings
from ._tool_sizes import TOOLS_SHARE, sized_tools
from ._toolbox import Toolbox
from .models._call import RetryPolicy
from .models._llm import ChatModel
from .models._resolve import chat_model
from .tools._code_scope import interrupt
from .tools._per_session import PerSession
from .tools._run_code import code_runs
from .tools._tool import HandOver, OutputStore, Tool

TIME_SHARE = 0.8  # of the tool's time limit, what a branch may spend before it reports
STOP_WAIT_S = 5.0  # how long a stop waits for the branch to close its history
UNFINISHED = ("max_rounds", "timeout", "loop")  # stops after which it is asked to report


class Delegating(Protocol):
    """What a branch reads of the agent it branches from."""

    model: ChatModel
    retry: RetryPolicy
    session: Session
    toolbox: Toolbox
    delegate_model: str | ChatModel | None
    _answers: AgentModel

    def settings(self) -> Settings: ...

    def notebook_state(self, limits: Limits[Settings] | None = None) -> str | None: ...

    def _builtins(self, store: OutputStore, *, branch: bool = False) -> list[Tool]: ...


class BranchAgent:
    """A branch's configuration, as the loop and the model answers read an agent's: the
    branch's model and tools, the agent's retry policy, settings and notebook state, with
    the time a branch may take kept under the tool's limit (`rounds` caps its rounds:
    1 when it is asked for its report)."""

    def __init__(self, agent: Delegating, model: ChatModel, *, rounds: int | None = None
                 ) -> None:
        self.model, self.retry = model, agent.retry
        self._agent, self._rounds = agent, rounds
        self.tools: dict[str, Tool] = {}
        self._schemas: list[dict[str, Any]] = []
        self._settings: tuple[Settings, Settings] | None = None

    def offer(self, tools: dict[str, Tool], schemas: list[dict[str, Any]] | None = None
              ) -> None:
        """Its tools (made once its session has the output store they write to) and the
        schemas sent for them (sized to the branch's window; by default in full)."""
        self.tools = tools
        self._schemas = [t.schema for t in tools.values()] if schemas is None else schemas

    def settings(self) -> Settings:
        base = self._agent.settings()
        if self._settings is None or self._settings[0] is not base:  # the same object
            # until they change, as the answers' caches expect
            update: dict[str, Any] = {"max_chat_seconds": min(
                base.max_chat_seconds, base.tool_timeout_s * TIME_SHARE)}
            if self._rounds is not None:
                update["max_tool_rounds"] = self._rounds
            self._settings = (base, base.model_copy(update=update))
        return self._settings[1]

    def tool_schemas(self, limits: Limits[Settings] | None = None) -> list[dict[str, Any]]:
        return self._schemas  # sized to the branch's window once, as it starts

    def notebook_state(self, limits: Limits[Settings] | None = None) -> str | None:
        return self._agent.notebook_state()  # the notebook's, as the session shows it

    def reporting(self) -> BranchAgent:
        """The same branch, allowed one round: asked for its report after a stop."""
        reporting = BranchAgent(self._agent, self.model, rounds=1)
        reporting.offer(self.tools, self._schemas)
        return reporting


class BranchStops:
    """The branch running in a session's turn, stopped when a tool result joins the
    session's history while it runs: the turn was interrupted, or the delegate call timed
    out, and its call was answered without it. Code its tools run stops too."""

    def __init__(self, events: EventStream) -> None:
        self._events = weakref.ref(events)
        self._lock = threading.Lock()
        self._thread: int | None = None
        self._idle = threading.Event()
        self._idle.set()

    def __call__(self, event: object) -> None:
        if isinstance(event, MessageAdded) and event.message.get("role") == "tool":
            self.stop()

    @contextmanager
    def running(self) -> Iterator[None]:
        with self._lock:
            self._thread = threading.get_ident()
            self._idle.clear()
        try:
            yield
        finally:
            with self._lock:
                self._thread = None
                self._idle.set()

    def stop(self) -> bool:
        """Raise KeyboardInterrupt in the branch's thread, stop the code its tool runs
        (its thread waits on it), and wait a little for the branch to close its history."""
        with self._lock:  # set while held: the thread cannot leave `running` meanwhile
            thread = self._thread
            if thread is None:
                return False
            interrupt(thread)
        events = self._events()
        if events is not None:
            code_runs(events).stop()
        self._idle.wait(STOP_WAIT_S)
        return True


branch_stops = PerSession(BranchStops)  # a session's branch stopper (subscribed once)


class _Relay:
    """A subscriber on the branch's own stream: its messages to the session's archive, its
    full outputs under the branch's name (call ids are the branch model's), its steps to
    the session's stream; and what the record counts."""

    def __init__(self, number: int, branch: Session, parent: EventStream) -> None:
        self.number, self.branch, self.parent = number, branch, parent
        self.transcript_tokens = self.tool_calls = self.compactions = 0

    def __call__(self, event: object) -> None:
        if isinstance(event, MessageAdded):
            history = self.branch.history
            self.transcript_tokens += history.message_tokens(len(history) - 1)
            self.parent.emit(BranchMessage(self.number, event.message))
            return
        if isinstance(event, OutputStored):
            self.parent.emit(OutputStored(f"branch{self.number}.{event.ref}", event.text))
            return
        if isinstance(event, ToolStarted):
            self.tool_calls += 1
        elif isinstance(event, Compacted) and event.decision.action == "compacted":
            self.compactions += 1
        if isinstance(event, (Status, ToolStarted, ToolFinished, Compacted, Retrying)):
            self.parent.emit(BranchProgress(self.number, event))


def branch_model(agent: Delegating) -> ChatModel:
    """The model a branch works with: the agent's `delegate_model`, else the setting, else
    the chat model itself."""
    spec = agent.delegate_model
    if spec is None:
        spec = agent.settings().delegate_model
    if spec is None or spec is agent.model or spec == agent.model.name:
        return agent.model
    return told_builtins(chat_model(spec, agent.settings()))


def branch_tools(agent: Delegating, store: OutputStore) -> dict[str, Tool]:
    """The agent's tools for a branch: its built-ins anew over the branch's store and
    without the session's doors, then the user's and the MCP servers' as they are."""
    built = {id(t) for t in agent.toolbox.builtins}
    tools = [*agent._builtins(store, branch=True),
             *(t for t in agent.toolbox.tools.values() if id(t) not in built)]
    return {t.name: t for t in tools}


def run_branch(agent: Delegating, task: str, briefing: str) -> str:
    """Run `task` in a branch of the agent's session; return the bounded report that
    joins the main history (the `delegate` tool's result)."""
    parent, task = agent.session, task.strip()
    number = len(parent.branches) + 1
    model = branch_model(agent)
    config = BranchAgent(agent, model)
    # the agent's compaction choices (its compaction model, the user's summarizer), asked
    # about the branch's model; no archive of its own: its messages go to the session's
    branch = Session(agent._answers.for_agent(config), system=texts.BRANCH_SYSTEM,
                     archive=False)
    branch.answers.model.probe()
    tools = branch_tools(agent, branch.store)
    # sized to the branch's own window as the session's are (`_tool_sizes`): a branch on a
    # small window would otherwise spend most of it on tool schemas
    budget = round(TOOLS_SHARE * branch.limits().thresholds.effective_window)
    config.offer(tools, sized_tools([t.schema for t in tools.values()], budget, lambda schemas:
             branch.answers.model.tools_tokens(schemas, branch.tracker.count_text)).schemas)
    relay = _Relay(number, branch, parent.events)
    branch.events.subscribe(relay)
    branch.events.subscribe(code_runs(parent.events))  # a run its turn left stops too
    prompt = texts.BRANCH_TASK.format(task=task)
    if briefing.strip():
        prompt += "\n\n" + texts.BRANCH_DATA.format(briefing=briefing)
    parent.events.emit(BranchStarted(number, task, model.name))
    status, report, rounds = "failed", "", 0
    with branch_stops(parent.events).running():
        try:
            result = run_chat(config, branch, prompt)
            rounds, status, report = result.rounds, result.stop_reason, result.text
            if status in UNFINISHED:
                why = (result.stop_message or status).rstrip(".")
                last = run_chat(config.reporting(), branch,
                                texts.BRANCH_REPORT_NOW.format(why=why), tool_choice="none")
                rounds += last.rounds
                report = last.text or report
        except KeyboardInterrupt:
            status = "interrupted"
            raise
        except NbagentError as error:
            report = texts.BRANCH_FAILED.format(error=error)
        finally:
            answer = _answer(parent, number, status, report, rounds, relay, model.name)
            parent.bill_branch(Branch(
                number, task, model.name, status, answer, rounds, relay.tool_calls,
                relay.transcript_tokens, parent.tracker.count_message(
                    {"role": "tool", "tool_call_id": "", "content": answer}),
                relay.compactions, branch.billing.prompt_tokens, branch.billing.output_tokens,
                branch.cost), branch.billing)
    if status == "handed_over":  # the user took its code as a cell: the turn is theirs
        raise HandOver(answer)
    return answer


def _answer(parent: Session, number: int, status: str, report: str, rounds: int,
            relay: _Relay, model: str) -> str:
    """The report as it enters the main history: a head line saying what it was and where
    its steps are, then the report, cut to the `delegate_max_chars` bound."""
    text = report.strip() or texts.BRANCH_EMPTY
    limits = parent.limits()
    bound = output_cap(limits.settings.delegate_max_chars, limits.thresholds.scale)
    if len(text) > bound:
        text = cap_output(text, bound) + texts.BRANCH_CUT
    head = texts.BRANCH_HEAD.format(number=number, status=status, rounds=rounds,
                                    calls=relay.tool_calls, model=model,
                                    transcript=figures.tokens(relay.transcript_tokens))
    return f"{head}\n{text}"
