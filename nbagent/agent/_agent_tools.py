"""`AgentToolsMixin`: the part of `Agent` that says which tools the model is offered — the
built-ins (over the agent's namespace), the user's own, MCP servers' — and what the
namespace shows (the notebook state, cell references). `Agent` in `_agent` holds the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ..engine._thresholds import Limits
from ._approval import Approval
from ._approval_guard import ApprovalGuard
from ._branch import run_branch
from ._configuration import Configuration
from ._model_side import AgentModel
from ._session import Session
from ._settings import Settings
from ._tool_sizes import TOOLS_SHARE, SizedTools, sized_tools
from ._toolbox import Toolbox
from .archive._redact import redact
from .models._call import RetryPolicy
from .models._llm import ChatModel
from .tools._builtin import notebook_tools
from .tools._namespace import notebook_state
from .tools._references import expand_cell_references
from .tools._tool import OutputStore, Tool

NOTEBOOK_STATE_TOKENS = 1_500  # at a 200K window; scaled down with the window


class AgentToolsMixin:
    """The tools an agent offers and what its namespace shows; `Agent` sets the state."""

    namespace: dict[str, Any]
    builtin_tools: bool | frozenset[str]
    toolbox: Toolbox
    session: Session
    model: ChatModel
    _configuration: Configuration
    # what a delegated task reads of the agent (`_branch.Delegating`)
    retry: RetryPolicy
    delegate_model: str | ChatModel | None
    _answers: AgentModel
    settings: Callable[[], Settings]
    _sized: tuple[list[dict[str, Any]], tuple[Any, ...], SizedTools] | None = None

    @property
    def tools(self) -> dict[str, Tool]:
        """Every tool offered now, by name: built-ins, your own, MCP servers'."""
        return self.toolbox.tools

    def add_tool(self, candidate: Tool | Callable[..., Any]) -> Tool:
        """Offer one more tool (a function or a `@tool`); a tool of the same name is replaced."""
        return self.toolbox.add(candidate)

    def tool_schemas(self, limits: Limits[Settings] | None = None) -> list[dict[str, Any]]:
        """The tool schemas each request offers: every tool's, shortened at a small window
        (`sized_tools`; under `limits`, a turn's: by default the limits now)."""
        return self.sized_tools(limits).schemas

    def sized_tools(self, limits: Limits[Settings] | None = None) -> SizedTools:
        """The tool schemas sized to the session's window (at most `TOOLS_SHARE` of the
        effective window under `limits`, by default the limits now: lean, leaner, then some
        built-ins left out) and what they cost; sized again when the tools, the window, the
        model or its counter change."""
        full = self.toolbox.schemas()
        limits = limits if limits is not None else self.session.limits()
        budget = round(TOOLS_SHARE * limits.thresholds.effective_window)
        count_text = self.session.tracker.count_text
        key = (budget, id(self.model), count_text)
        cached = self._sized
        if cached is not None and cached[0] is full and cached[1] == key:
            return cached[2]
        sized = sized_tools(full, budget,
                            lambda schemas: self._answers.tools_tokens(schemas, count_text))
        self._sized = (full, key, sized)
        return sized

    @property
    def approval(self) -> Approval:
        """What the model's code and MCP tools may do without asking the user (`allowed()`,
        `revoke()`), and how the user is asked."""
        return self.toolbox.approval

    def add_mcp_server(self, name: str, spec: Mapping[str, Any]) -> None:
        """Offer the tools of one more MCP server (`{"command", "args", "env"}` or
        `{"url"}`); it starts on the next chat (or `mcp_servers(start=True)`). A bad spec
        raises `ValueError`."""
        self.toolbox.add_mcp_server(name, spec)

    def remove_mcp_server(self, name: str) -> None:
        """Stop offering an MCP server's tools and stop its process."""
        self.toolbox.remove_mcp_server(name)

    def mcp_servers(self, *, start: bool = False) -> list[tuple[str, str, list[str]]]:
        """(name, state, tool names) of each MCP server; `start` starts the ones not
        started yet first, so each state is live (or says why the server cannot start)."""
        return self.toolbox.mcp_servers(start=start)

    def mcp_schema_tokens(self) -> dict[str, int]:
        """Tokens each MCP server's tool schemas take in every request, by server (a part
        of `breakdown().tools`)."""
        return self.toolbox.mcp_schema_tokens(self.session.tracker.count_text)

    def _offer_tools(self) -> None:
        """Offer the built-ins the agent chose, bound to the current session (a new session
        or `enable_python` changing offers them again)."""
        self.toolbox.offer_builtins(self._builtins(self.session.store))

    def _builtins(self, store: OutputStore, *, branch: bool = False) -> list[Tool]:
        """The built-ins the agent chose, bound to the current session and `store`; a
        delegated task's (`branch`) over its own store, without the session's doors
        (delegating again, asking for a compaction)."""
        chosen = self.builtin_tools
        offered = [] if chosen is False else notebook_tools(
            self.namespace, store,
            enable_python=self._configuration.settings().enable_python,
            archive=lambda: self.session.archive, events=self.session.events,
            settings=self._configuration.settings, approval=lambda: self.toolbox.approval,
            guard=ApprovalGuard(self).kept,
            delegate=None if branch else self._delegate,
            ask_compaction=None if branch else self._ask_compaction)
        if not isinstance(chosen, bool):
            offered = [t for t in offered if t.name in chosen]
        return offered

    def _delegate(self, task: str, briefing: str) -> str:
        """The `delegate` tool's door: `task` run in a branch of the current session."""
        return run_branch(self, task, briefing)

    def _ask_compaction(self, focus: str) -> str:
        """The `compact_context` tool's door: the current session notes the request."""
        return self.session.asked_compaction.ask(focus)

    def notebook_state(self, limits: Limits[Settings] | None = None) -> str | None:
        """The bounded listing of the namespace's variables (None when there are none),
        scaled to the window under `limits` (by default the limits now)."""
        limits = limits if limits is not None else self.session.limits()
        budget = max(100, limits.thresholds.scaled(NOTEBOOK_STATE_TOKENS))
        state = notebook_state(self.namespace, max_tokens=budget)
        return redact(state) if state is not None else None  # it goes to the provider

    def expand_references(self, text: str, *, errors: dict[int, str] | None = None) -> str:
        """jupyter-ai's conventions in a message: `{name}` inserts a variable's value;
        `In[3]`, `Out[3]`, `Err[3]` attach that cell's input, output or error."""
        return expand_cell_references(text, self.namespace, errors=errors)
