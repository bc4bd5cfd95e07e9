"""How the suite runs, and what a test that starts something real should use.

`python -m pytest` runs the tests on xdist workers (pyproject's addopts: `-n auto --dist
loadgroup`; `-n auto` is a worker per core, and four at least on 2 cores, three for the
fast loop, see below); `-n 0` runs them in this one process. Each worker is a process of
its own: a session or module fixture is started once per worker, not per run, and a test that
changes process-wide state (the environment, `nbagent.current()`, litellm's settings)
changes it only on its worker — the autouse fixture below and monkeypatch still put it
back for the next test there.

Tests that share a real component run one after another on one worker (an xdist group),
set here from what they use, so nothing needs marking by hand in the common cases:

- **browser**: the run's one JupyterLab (`lab`, `jupyterlab_server`), one Notebook 7
  (`notebook7`, `notebook7_server`) and one headless Chromium (`browser`). A browser test
  asks for `browser` and `lab` (or `tests.real.lab.serving("lab", prepare)` to write its
  notebooks into its module's folder first); see tests/real/lab.py.
- **llama** and **llama-own**: the embedded llama.cpp server. A test that can use the
  run's shared server (SmolLM2, 2,048-token window) asks for `local_server` and runs in
  "llama"; a test that starts its own — another window, a kernel or a subprocess that
  starts the embedded model, a server it kills — is marked `@pytest.mark.llama` and runs
  in "llama-own". The two groups run side by side only where a server runs one thread
  (`server_threads()`, on 2 or 3 cores): with more, its worker threads spin while they
  wait, and two servers at once stall each other, so both groups are one ("llama").
  (On 2 cores, a request read whole cost its server the same CPU with another server
  busy beside it, 11.1 s against 11.4 s alone.)
- **a module**: a test that uses a module-scoped fixture (a built wheel, an MCP server, a
  loaded tokenizer, a real kernel: `module_kernel` below) runs with the rest of its
  module, so the fixture starts once.

Every other test is spread over the workers one by one. A test that must not run beside
another one names a group for both (`@pytest.mark.xdist_group("name")`, kept as given):
they then run one after the other. A new kind of shared component gets a group the same
way: a marker or a fixture here, one row in `_group`. A test whose failure text holds a
lone surrogate is reported with it escaped (a worker sends UTF-8 only).
The fast loop for a change is `python -m pytest -m "not real and not slow"`.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from nbagent.engine import ENV_PREFIX
from tests.notebook.helpers import SharedKernel, shared_kernel, started_servers
from tests.real import lab as lab_helpers

# Shared, noisy machines: never fail a property test on how long it took.
settings.register_profile("nbagent", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("nbagent")

# A fixture in a test's closure that puts it in a group (see the docstring).
BROWSER_FIXTURES = {"browser", "jupyterlab_server", "notebook7_server"}


def _llama_own_group() -> str:
    """The group of the tests that start an embedded server of their own: beside the
    shared server's group when a server runs one thread (it never spins), else the same."""
    from nbagent.agent.models import server_threads

    return "llama-own" if server_threads() == 1 else "llama"


LLAMA_OWN = _llama_own_group()


def _group(item: pytest.Item) -> str | None:
    """The xdist group `item` runs in, or None to be spread one by one."""
    names = set(getattr(item, "fixturenames", ()))
    if item.get_closest_marker("llama"):
        return LLAMA_OWN
    if "local_server" in names:
        return "llama"
    if names & BROWSER_FIXTURES:
        return "browser"
    if _uses_a_module_fixture(item):
        return item.nodeid.split("::", 1)[0]  # its module
    return None


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    """True when a fixture `item` uses lives as long as its module (or its class or
    package): the module's tests then share one, on one worker."""
    info = getattr(item, "_fixtureinfo", None)  # pytest keeps no public way to ask
    defs = info.name2fixturedefs.values() if info is not None else ()
    return any(chain[-1].scope in ("module", "class", "package") for chain in defs if chain)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """`-n auto`: a worker per core, and at least three, or one more than the long
    groups — the browser and llama groups (two where servers run side by side) each keep
    one worker busy for minutes, mostly waiting on their servers, and the rest of the
    suite needs a worker of its own beside them: a worker running a group takes nothing
    else. A run that leaves the real tests out (the fast loop) has no long group, and
    each more worker collects the whole suite again."""
    try:
        import psutil  # xdist's own count: physical cores

        cores = psutil.cpu_count(logical=False)
    except ImportError:
        cores = None
    long_groups = 3 if LLAMA_OWN != "llama" else 2
    if "not real" in (config.getoption("markexpr", "") or ""):
        long_groups = 0
    return max(3, long_groups + 1, cores or os.cpu_count() or 1)


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            group = _group(item)
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))


def pytest_configure(config: pytest.Config) -> None:
    if config.getoption("dist", "no") == "loadgroup" and pytest.version_tuple >= (9, 2):
        # pytest 9.2 keeps node ids where xdist 3.8 cannot add a group: every group would
        # be lost without a word, and two llama.cpp servers would run at once
        raise pytest.UsageError(
            f"pytest {pytest.__version__} loses xdist's groups: install the dev extra's "
            "versions (python -m pip install -e '.[dev]'), or run with -n 0")


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """A worker sends its reports as UTF-8: text that cannot be (a lone surrogate in a
    failure's message, as the hostile-input tests' strict xfails show) is sent with the
    surrogate escaped, where it would have stopped the worker."""
    outcome = yield
    if os.environ.get("PYTEST_XDIST_WORKER"):
        report = outcome.get_result()  # type: ignore[attr-defined]
        if report.longrepr is not None and not _encodes(str(report.longrepr)):
            report.longrepr = _escaped(str(report.longrepr))
        report.sections = [(name, text if _encodes(text) else _escaped(text))
                           for name, text in report.sections]


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.fixture(autouse=True)
def _clean_nbagent_env(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch,
                       tmp_path: Path) -> Iterator[None]:
    """Tests start from the defaults, whatever the developer's shell exports, and keep
    their session archives in their own temporary directory. A real test outside the
    llama groups that started an embedded llama.cpp server (a kernel that loaded nbagent
    with no session current warm-starts one) fails: nothing there used it, and each cost
    the run seconds of CPU beside the group that runs such servers."""
    for name in list(os.environ):
        if name.startswith(ENV_PREFIX):
            monkeypatch.delenv(name)
    data = tmp_path / "nbagent-data"
    monkeypatch.setenv("NBAGENT_DATA_DIR", str(data))
    yield
    group = request.node.get_closest_marker("xdist_group")
    if request.node.get_closest_marker("real") and (group.args[0] if group and group.args
                                                    else None) not in ("llama", LLAMA_OWN):
        started = started_servers(tmp_path)
        assert not started, (
            f"this test started an embedded llama.cpp server ({', '.join(started)}): make a "
            "session current before %load_ext nbagent (or set NBAGENT_MODEL in the kernel's "
            "environment), or mark the test llama if the server is what it tests")


@pytest.fixture(scope="module")
def module_kernel(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedKernel]:
    """The module's one real kernel, its tests taking turns on it (`SharedKernel`; a
    module fixture: they run one after another on one worker)."""
    with shared_kernel(tmp_path_factory.mktemp("kernel")) as running:
        yield running


@pytest.fixture(scope="session")
def local_server() -> Iterator[Any]:
    """The run's embedded model: SmolLM2-135M on llama.cpp's server with a 2,048-token
    window, started at its first use and stopped at the end (a `nbagent.local.LocalServer`).
    Its users share its prompt cache and nothing else; a test that needs another window,
    or kills or restarts the server, starts its own (and is marked `llama`)."""
    from nbagent.local import LocalServer

    with LocalServer(2048) as running:
        yield running


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """The run's headless Chromium (Debian's, under Playwright; installed with apt when
    missing). Each test opens a context of its own (`tests.real.lab.open_notebook`)."""
    with lab_helpers.launched(lab_helpers.installed_chromium()) as running:
        yield running


@pytest.fixture(scope="session")
def jupyterlab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab_helpers.Lab]:
    """The run's JupyterLab 4; a module takes a folder on it through `lab`."""
    with lab_helpers.serve("lab", tmp_path_factory.mktemp("lab"), tmp_path_factory) as running:
        yield running


@pytest.fixture(scope="session")
def notebook7_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[lab_helpers.Lab]:
    """The run's Notebook 7 (the `notebook` package's own app); a module takes a folder on
    it through `notebook7`."""
    with lab_helpers.serve("notebook", tmp_path_factory.mktemp("notebook"),
                           tmp_path_factory) as running:
        yield running


lab = lab_helpers.serving("lab")  # the module's own empty folder on the run's JupyterLab
notebook7 = lab_helpers.serving("notebook")  # and on its Notebook 7
