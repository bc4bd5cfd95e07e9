"""The embedded server's own process, run as a script (standard library only, so it does
not import nbagent): llama-cpp-python's server, ended as soon as no process uses it. It
runs in its own session, so the kernel's signals (the stop button's SIGINT) never reach
it — and so nothing would end it after the kernel is SIGKILLed but this: a server shared
by a user's kernels (`--clients FILE`) ends once no process holds a lock on that file
(each kernel using it holds one; a killed process's lock goes with it); otherwise its
stdin is a pipe from the parent, which reaches end of file when the parent dies.

    python _server_child.py [--no-extra-buffers] [--reply-seconds 120] [--clients F] ...

Ours (the rest are llama_cpp.server's options): `--no-extra-buffers` turns off llama.cpp's
extra weight buffers (the AMX and repacked layouts): on a CPU that advertises AMX in a
VM that does not really enable it, the first multi-token decode dies of a protection
fault (SIGSEGV) in `ldtilecfg`. `--reply-seconds` bounds each generation in time.
`--clients` is the shared server's clients file. The prompt cache counts all of what each
entry holds (llama-cpp-python counts only the model's state, not the ~100 MB of scores
beside it, so a 256 MB cache held 1.3 GB after four prompts). The chat format
"nbagent-chatml" is registered from `_chat_handler.py`, loaded from this folder as a
package of its own (so its relative import of `_tool_prompt` works) — never nbagent's.
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
CLIENTS = "--clients"
UNUSED_POLL_S = 1.0  # how often a shared server checks whether any process still holds it
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


def _end_when_unused(clients: str) -> None:
    """A shared server: end once no process holds `clients` (we can lock it exclusively),
    removing the record that names this process first."""
    import fcntl
    import json
    import time

    # read only, never made: the kernel that starts a server holds the file already (its
    # `SharedServer`, the one writer of it); gone, no kernel can hold it, so end now
    try:
        descriptor = os.open(clients, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                             | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        os._exit(0)
    while True:
        time.sleep(UNUSED_POLL_S)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        state = clients.removesuffix(".clients") + ".json"
        try:
            with open(state, encoding="utf-8") as file:
                if json.load(file).get("pid") == os.getpid():
                    os.unlink(state)
        except (OSError, ValueError, AttributeError):
            pass
        os._exit(0)


def _cache_counts_everything() -> None:
    """The prompt cache's size as all its entries hold: their scores and tokens too."""
    from llama_cpp import llama_cache

    def size(cache: Any) -> int:
        return sum(state.llama_state_size + state.scores.nbytes + state.input_ids.nbytes
                   for state in cache.cache_state.values())

    setattr(llama_cache.LlamaRAMCache, "cache_size", property(size))  # noqa: B010


def _cache_keeps_no_prefix_scores() -> None:
    """A prompt cache entry keeps the model's state and only the last row of scores.

    llama-cpp-python keeps a row of scores per token where logits_all is on (its server's
    default; n_vocab floats: 196 KB a token for SmolLM2, 350 MB at 1,800 tokens; nbagent
    starts it with it off, `_local_server`), which nothing reads again: a request continuing a
    cached prompt evaluates at least its last token afresh. Counted (above), an entry over
    ~1,300 tokens outgrew the whole cache and was dropped at once, and the two prompts of
    an agent's turn (the call, its tools in the system message; the answer, without) kept
    evicting each other: every request was read whole. Loading broadcasts the row over
    the prefix's rows (never read)."""
    from llama_cpp import llama

    save = llama.Llama.save_state

    def save_state(self: Any) -> Any:
        state = save(self)
        state.scores = state.scores[-1:].copy()
        return state

    setattr(llama.Llama, "save_state", save_state)  # noqa: B010


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
    if CLIENTS in argv:
        at = argv.index(CLIENTS)
        clients = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
        threading.Thread(target=_end_when_unused, args=(clients,), name="end-when-unused",
                         daemon=True).start()
    else:
        threading.Thread(target=_end_with_parent, name="end-with-parent", daemon=True).start()
    _cache_counts_everything()
    _cache_keeps_no_prefix_scores()
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
