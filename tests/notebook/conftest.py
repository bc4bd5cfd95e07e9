"""A real IPython shell with nbagent's magics loaded, and a scripted session for it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from IPython.core.interactiveshell import InteractiveShell
from nbagent.widgets._cells_seen import LOG as CELL_LOG

import nbagent
from nbagent import Agent
from nbagent.testing import ScriptedModel


@pytest.fixture
def ip() -> Iterator[InteractiveShell]:
    shell = InteractiveShell.instance()
    # A scripted current session before the load: the warm start finds no embedded model.
    nbagent.set_current(Agent(model=ScriptedModel(), namespace={}, archive=False))
    shell.run_line_magic("load_ext", "nbagent")
    nbagent.set_current(None)  # each test starts with no session
    CELL_LOG.cells.clear()  # and no cells run before it waiting for its first chat
    yield shell
    shell.rl_next_input = None
    nbagent.set_current(None)


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    """A shell without the extension, for displays alone: display() publishes through one
    (a module opts in with `pytestmark = usefixtures("shell")`)."""
    yield InteractiveShell.instance()


@pytest.fixture
def clean_namespace(ip: InteractiveShell) -> Iterator[None]:
    """The shell is shared by the notebook tests: the variables a module's tests make leave
    with each test (a module opts in with `pytestmark = usefixtures("clean_namespace")`)."""
    before = set(ip.user_ns)
    yield
    for name in set(ip.user_ns) - before:
        del ip.user_ns[name]
