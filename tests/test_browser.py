"""The meter in real JupyterLab 4, rendered by headless Chromium (Debian's, driven by
Playwright). JupyterLab runs on 127.0.0.1 with a token; the test starts and stops it."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.real
ROOT = Path(__file__).parents[1]
CHROMIUM = "/usr/bin/chromium"
SCREENSHOT = ROOT / "docs" / "meter-in-jupyterlab.png"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def chromium() -> str:
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


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    root = tmp_path_factory.mktemp("lab")
    shutil.copy(ROOT / "examples" / "quickstart.ipynb", root)
    settings = tmp_path_factory.mktemp("lab-settings")
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text('{"fetchNews": "false", "checkForUpdates": false}')
    port, token = free_port(), secrets.token_hex(16)
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyter",
            "lab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            "--allow-root",
            f"--LabApp.user_settings_dir={settings}",
            "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("JupyterLab did not start") from None
                time.sleep(0.5)
        yield f"{base}/lab/tree/quickstart.ipynb?token={token}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


def run_menu(page, item: str) -> None:  # type: ignore[no-untyped-def]
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text=item).first.click()


def test_the_meter_renders_in_jupyterlab_and_changes_after_compact(lab: str, chromium: str) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--no-first-run",
            ],
        )
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.goto(lab)
            page.locator(".jp-Notebook .jp-Cell").first.wait_for(timeout=90_000)
            page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").first.wait_for(
                timeout=90_000
            )
            cells = page.locator(".jp-Notebook .jp-Cell")
            import nbformat

            source = nbformat.read(ROOT / "examples" / "quickstart.ipynb", as_version=4)
            compact_cell = next(
                i for i, cell in enumerate(source.cells) if cell.source.startswith("%compact")
            )
            cells.nth(compact_cell).scroll_into_view_if_needed()
            cells.nth(compact_cell).click()
            run_menu(page, "Run All Above Selected Cell")
            text = page.locator(".nbagent-meter-text").first
            text.wait_for(timeout=120_000)
            page.locator(".nbagent-tool").nth(1).wait_for(timeout=120_000)
            page.wait_for_function(
                "() => !document.querySelector('.nbagent-meter-body')?.textContent"
                ".includes('0 / 0 tokens')",
                timeout=60_000,
            )
            before = page.locator(".nbagent-meter-body").first.inner_text()
            colour = text.evaluate("e => getComputedStyle(e).color")
            assert "context left" in text.inner_text()
            assert colour == "rgb(46, 125, 50)"  # level ok: green
            assert page.locator(".nbagent-meter-body[data-level='ok']").count() == 1
            assert "last compaction" not in before

            cells.nth(compact_cell).scroll_into_view_if_needed()
            cells.nth(compact_cell).click()
            run_menu(page, "Run Selected Cell and All Below")
            page.locator(".nbagent-compaction").first.wait_for(timeout=120_000)
            page.wait_for_function(
                "() => document.querySelector('.nbagent-meter-body').textContent"
                ".includes('last compaction')",
                timeout=60_000,
            )
            after = page.locator(".nbagent-meter-body").first.inner_text()
            assert (
                after != before and "last compaction L" in after
            )  # e.g. "L2 memory: 1,778 → 1,241"
            page.locator(".nbagent-meter-body").first.scroll_into_view_if_needed()
            page.screenshot(path=str(SCREENSHOT))
        finally:
            browser.close()
