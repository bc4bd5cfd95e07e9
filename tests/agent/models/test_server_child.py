"""The embedded server's process script (`models/_server_child`), run as `LocalServer` runs it
(a script by path, in a fresh interpreter) with llama_cpp.server itself replaced by a
recorder: our own options are taken off the command line and acted on (`--reply-seconds`
reaches the chat handler, `--no-extra-buffers` turns llama.cpp's extra weight buffers
off), "nbagent-chatml" is registered without importing nbagent, and the process ends as
soon as its stdin pipe (the parent) closes. The real server is tests/reliability's."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import nbagent.agent.models

pytest.importorskip("llama_cpp")

SCRIPT = Path(nbagent.agent.models.__file__).parent / "_server_child.py"

# Runs the script's main() as `python _server_child.py ...` does, with the server replaced:
# it prints what the server would have been given, or (`wait`) waits for its parent.
RUN = textwrap.dedent("""
    import json, runpy, sys, time
    wait = sys.argv.pop(1) == "wait"

    def server(name, run_name, alter_sys):
        import llama_cpp
        from llama_cpp.llama_chat_format import LlamaChatCompletionHandlerRegistry
        handler = sys.modules["nbagent_local_handler._chat_handler"]
        formats = LlamaChatCompletionHandlerRegistry()._chat_handlers
        print(json.dumps({"module": name, "argv": sys.argv, "run_name": run_name,
                          "reply_seconds": handler.reply_seconds,
                          "registered": "nbagent-chatml" in formats,
                          "extra_buffers": llama_cpp.llama_model_default_params().use_extra_bufts,
                          "nbagent": "nbagent" in sys.modules}), flush=True)
        if wait:
            time.sleep(30)

    runpy.run_module = server
    sys.argv = sys.argv[1:]
    runpy.run_path(sys.argv[0], run_name="__main__")
""")


def run(*args: str) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", RUN, "print", str(SCRIPT), *args],
                          capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_our_options_are_taken_off_and_the_rest_go_to_the_server() -> None:
    seen = run("--no-extra-buffers", "--model", "m.gguf", "--reply-seconds", "7.5",
               "--port", "8123")
    assert seen["module"] == "llama_cpp.server" and seen["run_name"] == "__main__"
    assert seen["argv"] == ["llama_cpp.server", "--model", "m.gguf", "--port", "8123"]
    assert seen["reply_seconds"] == 7.5 and seen["extra_buffers"] is False
    assert seen["registered"] is True and seen["nbagent"] is False


def test_without_our_options_the_server_keeps_its_defaults() -> None:
    seen = run("--model", "m.gguf")
    assert seen["argv"] == ["llama_cpp.server", "--model", "m.gguf"]
    assert seen["reply_seconds"] == float("inf") and seen["extra_buffers"] is True


def test_the_process_ends_when_its_parent_closes_the_pipe() -> None:
    child = subprocess.Popen([sys.executable, "-c", RUN, "wait", str(SCRIPT), "--model", "m"],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdin is not None
        assert json.loads(child.stdout.readline())["argv"][0] == "llama_cpp.server"
        started = time.monotonic()
        child.stdin.close()  # as when the kernel dies
        assert child.wait(timeout=10) == 0
        assert time.monotonic() - started < 5  # not the server's 30 s
    finally:
        child.kill()
        child.wait()
