"""The embedded server's own process, run as a script (standard library only, so it does
not import nbagent): llama-cpp-python's server, ended as soon as the process that started
it is gone. It runs in its own session, so the kernel's signals (the stop button's
SIGINT) never reach it — and so nothing would end it after the kernel is SIGKILLed but
this: its stdin is a pipe from the parent, which reaches end of file when the parent dies.

    python _server_child.py [--no-extra-buffers] [--reply-seconds 120] --model m.gguf ...

Ours (the rest are llama_cpp.server's options): `--no-extra-buffers` turns off llama.cpp's
extra weight buffers (the AMX and repacked layouts): on a CPU that advertises AMX in a
VM that does not really enable it, the first multi-token decode dies of a protection
fault (SIGSEGV) in `ldtilecfg`. `--reply-seconds` bounds each generation in time. The
chat format "nbagent-chatml" is registered from `_chat_handler.py`, loaded from this folder
as a package of its own (so its relative import of `_tool_prompt` works) — never nbagent's.
"""

from __future__ import annotations

import importlib
import os
import runpy
import stat
import sys
import threading
import types
from typing import Any

NO_EXTRA_BUFFERS = "--no-extra-buffers"
REPLY_SECONDS = "--reply-seconds"
HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "nbagent_local_handler"  # this folder, as a package whose __init__ never runs


def _end_with_parent() -> None:
    try:
        if not stat.S_ISFIFO(os.fstat(sys.stdin.fileno()).st_mode):
            return  # not started by LocalServer (no pipe to watch)
        while sys.stdin.buffer.read(4096):
            pass
    except (OSError, ValueError):
        pass
    os._exit(0)


def _without_extra_buffers() -> None:
    import llama_cpp
    import llama_cpp.llama

    default = llama_cpp.llama_model_default_params

    def params() -> Any:
        made = default()
        made.use_extra_bufts = False
        return made

    llama_cpp.llama_model_default_params = params
    llama_cpp.llama.llama_cpp.llama_model_default_params = params


def _register_handler(reply_seconds: float | None) -> None:
    package = types.ModuleType(PACKAGE)
    package.__path__ = [HERE]  # its modules are found here: `_chat_handler`, `_tool_prompt`
    sys.modules[PACKAGE] = package
    handler = importlib.import_module(f"{PACKAGE}._chat_handler")
    if reply_seconds is not None:
        setattr(handler, "reply_seconds", reply_seconds)  # noqa: B010 (a module by path)
    handler.register()


def main(argv: list[str]) -> None:
    threading.Thread(target=_end_with_parent, name="end-with-parent", daemon=True).start()
    if NO_EXTRA_BUFFERS in argv:
        argv = [a for a in argv if a != NO_EXTRA_BUFFERS]
        _without_extra_buffers()
    reply_seconds = None
    if REPLY_SECONDS in argv:
        at = argv.index(REPLY_SECONDS)
        reply_seconds = float(argv[at + 1])
        argv = argv[:at] + argv[at + 2:]
    _register_handler(reply_seconds)
    sys.argv = ["llama_cpp.server", *argv]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main(sys.argv[1:])
