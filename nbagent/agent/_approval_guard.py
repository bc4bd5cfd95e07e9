"""What governs whether the model's actions ask, kept as the user set it: the approved code
runs in the user's own process and could widen its own approval — turn `run_code` to
auto, allow all code, replace the question's `ask` or the code runner, or start a new
session for the next chat (`nbagent.new_session(settings={"run_code": "auto"})`,
`set_current(...)`) — so every later run went unasked and nothing said so.
`ApprovalGuard.kept` reads these before a run and, after it, puts back whatever the run
changed and says what in one line: only the user changes how they are asked. (The run has
the user's rights; this keeps nbagent's own switches, it is not a sandbox.)
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from ._approval import Approval, Scope, scope_words
from ._asking import ask_with_input
from ._settings import ENV_PREFIX
from .tools._code_runner import CodeRunner, installed_runner, use_code_runner

# The settings that decide what runs unasked: the code policy, the older python tool (code
# run unseen, never asked) and the MCP config file (its servers' `alwaysAllow`).
GOVERNING = ("run_code", "enable_python", "mcp_config")


@dataclass(frozen=True)
class _Governing:
    overrides: dict[str, Any]
    environ: dict[str, str | None]
    effective: dict[str, Any]
    approval: Approval
    ask: Any
    allowed: frozenset[Scope]
    runner: CodeRunner | None
    kernel: Any  # the kernel's agent, the one the next chat talks to


def _kernel_agent() -> Any:
    # Read where it lives, not imported: `_current` imports the agent, which imports this
    # module; a kernel with no `_current` loaded has no kernel agent a run could replace
    # (and a run that loads it to make one is read after the run).
    kept = sys.modules.get("nbagent.agent._current")
    return kept.kernel_agent() if kept is not None else None


class ApprovalGuard:
    """Keeps one agent's approval settings as the user set them across a run of code."""

    def __init__(self, agent: Any) -> None:
        self._agent = agent

    def _read(self) -> _Governing:
        configuration = self._agent._configuration
        settings = configuration.settings()
        approval = self._agent.toolbox.approval
        return _Governing(
            overrides={k: configuration.overrides[k] for k in GOVERNING
                       if k in configuration.overrides},
            environ={k: os.environ.get(f"{ENV_PREFIX}{k.upper()}") for k in GOVERNING},
            effective={k: getattr(settings, k) for k in GOVERNING},
            approval=approval, ask=approval.ask, allowed=frozenset(approval._allowed),
            runner=installed_runner(), kernel=_kernel_agent())

    @contextmanager
    def kept(self, label: str) -> Iterator[list[str]]:
        """Around a run named `label`: the list yielded gets, after it, the one line
        saying what the run changed and that it was undone (empty when nothing)."""
        before = self._read()
        said: list[str] = []
        try:
            yield said
        finally:
            changes = self._undo(before)
            if changes:
                said.append(f"{label} changed how you are asked ({'; '.join(changes)}) — "
                            "undone: only you change that (agent.configure(run_code=...), or "
                            "answer a at the question); the next run asks as before")

    def _undo(self, before: _Governing) -> list[str]:
        after = self._read()
        changes: list[str] = []
        configuration = self._agent._configuration
        for key in GOVERNING:
            if before.effective[key] != after.effective[key]:
                changes.append(f"{key} {before.effective[key]!r} → {after.effective[key]!r}")
            if key in before.overrides:
                configuration.overrides[key] = before.overrides[key]
            else:
                configuration.overrides.pop(key, None)
            name, value = f"{ENV_PREFIX}{key.upper()}", before.environ[key]
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        if after.approval is not before.approval:
            changes.append("the approval object replaced")
            self._agent.toolbox.approval = before.approval
        approval = before.approval
        if approval.ask is not before.ask:
            changes.append("the question's ask replaced")
            approval.ask = before.ask
        current = frozenset(approval._allowed)
        if current != before.allowed:
            added = sorted(current - before.allowed)
            removed = sorted(before.allowed - current)
            changes.extend([f"allowed {scope_words(s)}" for s in added] +
                           [f"took back {scope_words(s)}" for s in removed])
            approval._allowed.clear()
            approval._allowed.update(before.allowed)
        if installed_runner() is not before.runner:
            changes.append("the code runner replaced")
            use_code_runner(before.runner)
        if before.effective != after.effective:
            self._agent._offer_tools()  # what is offered follows the settings put back
        kernel = _kernel_agent()
        if kernel is not None and kernel is not before.kernel and kernel is not self._agent:
            changes.extend(_kept_in(kernel, before))
        return changes


def _kept_in(other: Any, before: _Governing) -> list[str]:
    """A session the run started and made the kernel's (the next chat talks to it) asks as
    the user had it: its governing settings, allowances and question put back to the
    user's; the session itself stays (the user approved starting it)."""
    changes: list[str] = []
    configuration = other._configuration
    settings = configuration.settings()
    for key in GOVERNING:
        now = getattr(settings, key)
        if now != before.effective[key]:
            changes.append(f"its new session's {key} {before.effective[key]!r} → {now!r}")
            configuration.overrides[key] = before.effective[key]
    approval = other.toolbox.approval
    extra = frozenset(approval._allowed) - before.allowed
    if extra:
        changes.extend(f"its new session allowed {scope_words(s)}" for s in sorted(extra))
        approval._allowed.difference_update(extra)
    if approval.ask is not before.ask:
        if approval.ask is not ask_with_input:  # a fresh session's own question is no widening
            changes.append("its new session's question replaced")
        approval.ask = before.ask
    if changes:
        other._offer_tools()
    return changes
