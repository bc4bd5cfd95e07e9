"""What the browser tests share: one Jupyter server per app — JupyterLab 4 or Notebook 7, on
127.0.0.1 with a token — and one Debian Chromium driven by Playwright, each started once per
test run (per xdist worker: every test that uses them runs on the one worker of the "browser"
group, see tests/conftest.py) and stopped at its end. Each test module gets a folder of its
own on the server (the `lab` and `notebook7` fixtures, or `serving(app, prepare)` to write
files there first), with JupyterLab's settings back at their defaults and its kernels shut
down when the module ends. Also here: notebooks written to disk (`notebook`), and what a test
does on a page: open a notebook, run a cell, wait for the kernel, use a menu, save (`save`)
and reopen (`reload`)."""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from nbagent.engine import ENV_PREFIX

CHROMIUM = "/usr/bin/chromium"
WAIT_MS = 120_000
# How often a wait on the page checks its condition. Playwright's default checks at every
# animation frame, which keeps headless Chromium drawing 60 frames a second for as long
# as the wait lasts: ten times the CPU of checking every 100 ms (0.07 against 0.007 s a
# second on a plain page), for a wait that lasts minutes over the browser group.
POLL_MS = 100
CELL = ".jp-Notebook .jp-Cell"
LINE = ".jp-OutputArea-output > .nbagent-meter-body"  # a chat cell's meter: plain HTML
# Each app: its name in messages, the app class that takes the settings options, and its
# own options (JupyterLab's news and update checks would reach for the network).
APPS = {
    "lab": ("JupyterLab", "LabApp", ["--LabApp.news_url=",
                                     "--LabApp.check_for_updates_class="
                                     "jupyterlab.NeverCheckForUpdate"]),
    "notebook": ("Notebook 7", "JupyterNotebookApp", []),
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def notebook(path: Path, *sources: str) -> None:
    """Write a notebook of these code cells, on the python3 kernel.

    A notebook that makes a scripted session does so in a cell before `%load_ext nbagent`
    where its test does not watch the load itself: with a stand-in current, the load starts
    no background import of litellm, which cost each kernel ~4 s of CPU (19 kernels a run,
    most of the browser group's kernel time) for a model it never asks. The
    cells run in order all the same, and nothing the tests assert comes from the load
    (only the first chat's note of the cells run before it loses the session's own cell).
    `serving(..., litellm=...)` names the notebooks that do import it, and the module's
    folder fails when any other kernel began to: the quickstart, which loads first and
    picks its model after, as a user does, keeps that order."""
    import nbformat  # at use: its JSON-schema validator costs seconds to import

    cells = [nbformat.v4.new_code_cell(source) for source in sources]
    made = nbformat.v4.new_notebook(cells=cells)
    made.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                   "language": "python"}
    nbformat.write(made, path)


class Lab:
    """A running Jupyter server as one test module sees it: its address, token and app, and
    the module's own folder on it (`root`, served at `folder`; the server's root when
    `folder` is empty); `data` is the folder its kernels keep nbagent's sessions in."""

    def __init__(self, base: str, token: str, root: Path, app: str = "lab", *,
                 folder: str = "", settings: Path | None = None,
                 data: Path | None = None, imports: Path | None = None) -> None:
        self.base, self.token, self.root, self.app = base, token, root, app
        self.folder, self.settings, self.data, self.imports = folder, settings, data, imports

    def path(self, name: str) -> str:
        """`name`'s path on the server."""
        return f"{self.folder}/{name}" if self.folder else name

    def url(self, name: str, workspace: str) -> str:
        """Where `name` opens: in JupyterLab, in a workspace of its own (reset, so no
        layout carries over; named after the module's folder too, so no other module's
        carries over); Notebook 7 keeps no workspaces."""
        if self.app == "notebook":
            return f"{self.base}/notebooks/{self.path(name)}?token={self.token}"
        named = f"{self.folder}-{workspace}" if self.folder else workspace
        return f"{self.base}/lab/workspaces/{named}/tree/{self.path(name)}?reset&token={self.token}"

    def folder_for(self, name: str) -> Lab:
        """A fresh folder `name` on this server, with the user settings back at what the
        server started with (a module that switched the theme leaves it to no other)."""
        (self.root / name).mkdir()
        if self.settings is not None:
            for changed in self.settings.rglob("*.jupyterlab-settings"):
                if changed.relative_to(self.settings).as_posix() != NOTIFICATIONS:
                    changed.unlink()
        return Lab(self.base, self.token, self.root / name, self.app, folder=name,
                   settings=self.settings, data=self.data, imports=self.imports)

    def kernels_noted(self, kind: str) -> set[str]:
        """The notebooks of this folder whose kernels started ("kernel") or began to import
        litellm ("litellm"), as each kernel of the server notes it (`IMPORT_NOTE`)."""
        assert self.imports is not None
        notebooks = (Path(note.read_text()) for note in self.imports.glob(f"*.{kind}"))
        return {path.name for path in notebooks if path.parent.resolve() == self.root.resolve()}

    def _api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(f"{self.base}/api/{path}", method=method,
                                         headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(request, timeout=30) as answer:
            body = answer.read()
        return json.loads(body) if body else None

    def shut_down_kernels(self) -> None:
        """Shut down the kernels of the notebooks in this folder (their sessions end), all
        at once: the server waits for each kernel to exit (seconds each, one after the
        other otherwise)."""
        from concurrent.futures import ThreadPoolExecutor

        ids = [session["id"] for session in self._api("GET", "sessions")
               if session.get("path", "").startswith(f"{self.folder}/")]
        with ThreadPoolExecutor(max_workers=max(1, len(ids))) as pool:
            list(pool.map(lambda id_: self._api("DELETE", f"sessions/{id_}"), ids))


NOTIFICATIONS = "@jupyterlab/apputils-extension/notification.jupyterlab-settings"
# An IPython startup file of the servers' kernels: each kernel notes its notebook's path
# in `{folder}` as it starts (`<pid>.kernel`) and as it starts to import litellm
# (`<pid>.litellm`). A finder first on sys.meta_path sees the import begin, in whichever
# thread, before any of it runs; the file leaves no name in the user's namespace.
IMPORT_NOTE = """\
def _note_litellm(folder={folder!r}):
    import os, sys

    def note(kind):
        with open(os.path.join(folder, f"{{os.getpid()}}.{{kind}}"), "w") as file:
            file.write(os.environ.get("JPY_SESSION_NAME", ""))

    class NoteLitellm:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name == "litellm":
                note("litellm")
            return None

    note("kernel")

    sys.meta_path.insert(0, NoteLitellm)


_note_litellm()
del _note_litellm
"""
# The sync contents manager: the default async one lists a folder in steps, and a file
# renamed between its listing and its stat makes the whole listing a 404, which JupyterLab
# shows as a "Directory not found" dialog over the page (the rename test renames
# Untitled.ipynb while the file browser polls its folder). A sync listing runs whole
# between two requests of the server's one event loop.
CONTENTS = "jupyter_server.services.contents.largefilemanager.LargeFileManager"


@contextmanager
def serve(app: str, root: Path, scratch: pytest.TempPathFactory) -> Iterator[Lab]:
    """Run `jupyter <app>` on `root` with settings of its own (no news, no update check)
    until the block ends. Its kernels start from the defaults, as each test does: no
    NBAGENT_ setting of the shell that runs the tests, and a data folder of their own;
    their default model is a cloud one, so loading the extension starts no embedded server,
    and they note an import of litellm (`IMPORT_NOTE`) in a folder of their own."""
    title, app_class, options = APPS[app]
    settings = scratch.mktemp(f"{app}-settings")
    plugin = settings / NOTIFICATIONS
    plugin.parent.mkdir(parents=True)
    plugin.write_text(json.dumps({"fetchNews": "false", "checkForUpdates": False}))
    port, token = free_port(), secrets.token_hex(16)
    env = {k: v for k, v in os.environ.items() if not k.startswith((ENV_PREFIX, "OPENAI_"))}
    data = scratch.mktemp(f"{app}-nbagent-data")
    env["NBAGENT_DATA_DIR"] = str(data)
    # Not the embedded model: a notebook that loads nbagent before it picks its own model
    # (the quickstart) would warm-start a llama.cpp server in its kernel for nothing (its
    # CPU taken from the llama group's tests beside this one). A notebook that forgot to
    # pick one fails at its first chat (no key, none passed on) instead of starting a
    # server here.
    env["NBAGENT_MODEL"] = "openai/gpt-4o-mini"
    imports = scratch.mktemp(f"{app}-litellm-imports")
    env["IPYTHONDIR"] = str(scratch.mktemp(f"{app}-ipython"))
    startup = Path(env["IPYTHONDIR"]) / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-note-litellm.py").write_text(IMPORT_NOTE.format(folder=str(imports)))
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", app, "--no-browser", "--ip=127.0.0.1",
         f"--port={port}", f"--IdentityProvider.token={token}",
         f"--ServerApp.root_dir={root}", "--allow-root",
         f"--ServerApp.contents_manager_class={CONTENTS}",
         f"--{app_class}.user_settings_dir={settings}",
         f"--{app_class}.workspaces_dir={scratch.mktemp(f'{app}-workspaces')}", *options],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(f"{title} did not start") from None
                time.sleep(0.5)
        yield Lab(base, token, root, app, settings=settings, data=data, imports=imports)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def module_folder(server: Lab, request: pytest.FixtureRequest,
                  prepare: Callable[[Path], None] | None = None,
                  litellm: tuple[str, ...] = ()) -> Iterator[Lab]:
    """The requesting module's own folder on `server`, which `prepare` fills first; its
    kernels are shut down when the module ends, and then the notebooks whose kernels
    imported litellm must be exactly those of `litellm` that ran (see `notebook`)."""
    lab = server.folder_for(request.module.__name__.rsplit(".", 1)[-1])
    if prepare is not None:
        prepare(lab.root)
    try:
        yield lab
    finally:
        lab.shut_down_kernels()
    imported = lab.kernels_noted("litellm")
    litellm = tuple(set(litellm) & lab.kernels_noted("kernel"))  # those that ran, in this run
    assert imported == set(litellm), (
        f"kernels of {sorted(imported - set(litellm)) or 'no notebook'} imported litellm, "
        f"of {sorted(set(litellm) - imported) or 'none'} did not, as expected: make the "
        "scripted session current in a cell before %load_ext nbagent (tests.real.lab.notebook)")


def serving(app: str, prepare: Callable[[Path], None] | None = None,
            litellm: tuple[str, ...] = ()) -> Any:
    """A module fixture: the run's `app` server ("lab" or "notebook") with a fresh folder
    of the module's own, which `prepare` fills first; the kernels of the notebooks named in
    `litellm`, and only theirs, import litellm. (The `lab` and `notebook7` fixtures are
    this without `prepare`.)"""
    if app == "lab":
        @pytest.fixture(scope="module")
        def running(jupyterlab_server: Lab, request: pytest.FixtureRequest) -> Iterator[Lab]:
            yield from module_folder(jupyterlab_server, request, prepare, litellm)
    else:
        @pytest.fixture(scope="module")
        def running(notebook7_server: Lab, request: pytest.FixtureRequest) -> Iterator[Lab]:
            yield from module_folder(notebook7_server, request, prepare, litellm)
    return running


def installed_chromium() -> str:
    """Debian's Chromium (Playwright cannot download its own browser here): installed
    with apt when missing, as root or through sudo."""
    if not Path(CHROMIUM).exists():
        sudo = [] if os.geteuid() == 0 else ["sudo", "-n"]
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        for command in (
            ["apt-get", "update", "-qq"],
            ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "chromium"],
        ):
            done = subprocess.run([*sudo, *command], env=env, capture_output=True, text=True)
            if done.returncode != 0:
                pytest.fail(
                    f"Chromium is needed at {CHROMIUM} and could not be installed "
                    f"({' '.join(command)}: {done.stderr.strip()[-300:]}). Install it with: "
                    "sudo apt-get install chromium"
                )
    return CHROMIUM


@contextmanager
def launched(chromium: str) -> Iterator[Any]:
    """Headless Chromium under Playwright until the block ends."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                  "--disable-component-update", "--no-first-run"],
        )
        try:
            yield browser
        finally:
            browser.close()


# A module written before the run shared its browser imports these two by name
# (`chromium, browser = shared.chromium, shared.browser`): `browser` hands on the run's own
# (tests/conftest.py's fixture of that name), so no module starts a second Chromium.
@pytest.fixture(scope="module")
def chromium() -> str:
    return installed_chromium()


@pytest.fixture(scope="module")
def browser(browser: Any) -> Any:
    return browser


def open_notebook(browser: Any, lab: Lab, name: str, workspace: str) -> Any:
    context = browser.new_context(viewport={"width": 1280, "height": 1000})
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.base)
    page = context.new_page()
    page.goto(lab.url(name, workspace))
    page.locator(CELL).first.wait_for(timeout=WAIT_MS)
    idle(page)
    return page


def accept_kernel_choice(page: Any) -> None:
    """Take the kernel JupyterLab offers when it asks which one to start ("Select Kernel",
    Python 3 preselected), as a user would: on a loaded machine it asks when the list of
    kernels was not there in time to start the notebook's own. Any other dialog stays, for
    the caller to fail on."""
    dialog = page.locator(".jp-Dialog").filter(has_text="Select Kernel")
    if dialog.count():
        dialog.locator(".jp-Dialog-button.jp-mod-accept").first.click()
        dialog.wait_for(state="detached", timeout=WAIT_MS)


def idle(page: Any) -> None:
    page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(
        timeout=WAIT_MS)


def menu(page: Any, top: str, *items: str) -> None:
    page.locator(".lm-MenuBar-itemLabel", has_text=top).first.click()
    for item in items:
        page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


PROMPT_JS = ("(index) => document.querySelectorAll('.jp-Notebook .jp-Cell')[index]"
             ".querySelector('.jp-InputPrompt').textContent")


def run_cell(page: Any, index: int, *, wait: bool = True) -> Any:
    """Run one cell (Ctrl+Enter, again if the key was lost) and, with `wait`, until its
    prompt shows a new execution count."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    cell = page.locator(CELL).nth(index)
    # A notebook just opened may redraw a cell while it is scrolled to ("not attached to
    # the DOM"); a scroll, unlike a second Ctrl+Enter, is safe to try again.
    for attempt in range(3):
        try:
            cell.scroll_into_view_if_needed(timeout=15_000)
            break
        except PlaywrightError:
            if attempt == 2:
                raise
            page.wait_for_timeout(500)
    before = page.evaluate(PROMPT_JS, index)
    started = f"(index) => {{ const p = ({PROMPT_JS})(index); return p !== {json.dumps(before)}" \
              " && /\\[(\\d+|\\*)\\]/.test(p); }"
    for attempt in range(3):
        accept_kernel_choice(page)
        dialog = page.locator(".jp-Dialog")
        assert not dialog.count(), f"JupyterLab shows a dialog: {dialog.first.inner_text()}"
        cell.locator(".jp-InputArea-editor").click()
        page.keyboard.press("Control+Enter")
        try:
            page.wait_for_function(started, arg=index, timeout=15_000, polling=POLL_MS)
            break
        except PlaywrightTimeout:
            if attempt == 2:
                raise
    if wait:
        page.wait_for_function(f"(index) => /\\[\\d+\\]/.test(({PROMPT_JS})(index))",
                               arg=index, timeout=WAIT_MS, polling=POLL_MS)
        idle(page)
    return cell


def save(page: Any, path: Path, needle: str) -> None:
    """Save the notebook (Ctrl+S) and wait until its file holds `needle`: outputs only
    the last run wrote, so the file on disk is the one the page shows."""
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 60
    while needle not in path.read_text():
        assert time.monotonic() < deadline, "the notebook was not saved"
        time.sleep(0.1)


def reload(page: Any, cells: int | None = None) -> None:
    """Shut the kernel down and reload the page: what shows now comes from the file (and,
    with `cells`, once that many cells are drawn)."""
    path = page.evaluate(NOTEBOOK_PATH_JS)
    sessions = page.evaluate(SESSIONS_JS)
    ids = [s["id"] for s in sessions if s["path"] == path and s["kernel"]]
    # The wait below is for these sessions to end: with none to wait for, it would pass
    # at once and the test go on beside the old kernel.
    assert ids, f"the page shows {path!r}, and the server runs kernels for {sessions}"
    menu(page, "Kernel", "Shut Down Kernel")
    # gone from the server, so the reloaded page starts a kernel of its own
    page.wait_for_function(SESSIONS_GONE_JS, arg=ids, timeout=WAIT_MS, polling=POLL_MS)
    page.reload()
    page.locator(CELL).first.wait_for(timeout=WAIT_MS)
    idle(page)  # the new kernel is up and the notebook drawn: its cells stay attached
    if cells is not None:
        page.wait_for_function(f"(n) => document.querySelectorAll({json.dumps(CELL)}).length"
                               " === n", arg=cells, timeout=WAIT_MS, polling=POLL_MS)
    settled(page)  # outputs drawn


# The notebook a page shows, as the server names its path (JupyterLab: .../tree/<path>,
# Notebook 7: .../notebooks/<path>); the server's sessions (id, path, whether a kernel
# runs), and whether the sessions of these ids have all ended.
NOTEBOOK_PATH_JS = ("() => decodeURIComponent(/\\/(?:tree|notebooks)\\/([^?#]*)/"
                    ".exec(location.pathname)[1])")
SESSIONS_JS = """async () => {
  const answer = await fetch('/api/sessions', {cache: 'no-store'});
  if (!answer.ok) throw new Error(`/api/sessions: ${answer.status}`);
  return (await answer.json()).map(s => ({id: s.id, path: s.path, kernel: !!s.kernel}));
}"""
SESSIONS_GONE_JS = """async (ids) => {
  const answer = await fetch('/api/sessions', {cache: 'no-store'});
  return answer.ok && !(await answer.json()).some(s => ids.includes(s.id) && s.kernel);
}"""
# True once the notebook's page has not changed for `quiet` ms (a MutationObserver).
SETTLED_JS = """(quiet) => new Promise(done => {
  let timer = setTimeout(() => { observer.disconnect(); done(true); }, quiet);
  const observer = new MutationObserver(() => {
    clearTimeout(timer);
    timer = setTimeout(() => { observer.disconnect(); done(true); }, quiet);
  });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true});
})"""


def settled(page: Any, quiet_ms: int = 500) -> None:
    """Wait until nothing on the page has changed for `quiet_ms`: the outputs are drawn."""
    page.wait_for_function(SETTLED_JS, arg=quiet_ms, timeout=WAIT_MS)
