"""litellm's import starts at `%load_ext nbagent` in the background: the load itself never
imports it (nor waits for it), a chat needing it meanwhile gets the whole module, and an
import that fails fails nothing. Each case runs in a fresh interpreter, where litellm is
not imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SHELL = textwrap.dedent("""
    import json, sys, threading
    from IPython.core.interactiveshell import InteractiveShell
    import nbagent.agent.models._litellm as door
    shell = InteractiveShell.instance()
""")


def python(code: str, tmp_path: Path) -> tuple[dict[str, Any], str]:
    """Run `code` in a fresh interpreter on a hosted model's session: what its last line
    printed (JSON) and its stderr."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("NBAGENT_")}
    env.update({"NBAGENT_MODEL": "openai/gpt-4o-mini", "NBAGENT_DATA_DIR": str(tmp_path),
                "LITELLM_LOCAL_MODEL_COST_MAP": "True"})
    out = subprocess.run([sys.executable, "-c", SHELL + textwrap.dedent(code)], env=env,
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_the_load_starts_the_import_and_does_not_import_litellm_itself(tmp_path: Path) -> None:
    result, _ = python("""
        started = []
        door.import_in_background = lambda: started.append(True)  # records, imports nothing
        shell.run_line_magic("load_ext", "nbagent")
        print(json.dumps({"started": started, "litellm": "litellm" in sys.modules,
                          "chat": "chat" in shell.magics_manager.magics["cell"]}))
    """, tmp_path)
    assert result == {"started": [True], "litellm": False, "chat": True}


@pytest.mark.slow  # a fresh interpreter imports litellm whole (~10 s)
def test_litellm_arrives_after_the_load_with_no_chat(tmp_path: Path) -> None:
    result, stderr = python("""
        started = []
        start = door.import_in_background
        door.import_in_background = lambda: started.append(start()) or started[-1]
        shell.run_line_magic("load_ext", "nbagent")
        for thread in started:
            thread.join()
        print(json.dumps({"threads": len(started), "daemon": all(t.daemon for t in started),
                          "name": [t.name for t in started],
                          "litellm": "litellm" in sys.modules,
                          "again": start() is None}))
    """, tmp_path)
    # the thread the load started, captured from its return value (it may finish at once)
    assert result["threads"] == 1 and result["name"] == ["nbagent-import-litellm"]
    assert result["litellm"] is True
    assert result["daemon"] is True  # a closing kernel never waits for it
    assert result["again"] is True  # imported: a second load starts no second import
    assert stderr == ""


@pytest.mark.slow  # a fresh interpreter imports litellm whole (~10 s)
def test_a_chat_that_needs_litellm_during_the_import_gets_the_whole_module(
        tmp_path: Path) -> None:
    result, _ = python("""
        shell.run_line_magic("load_ext", "nbagent")
        module = door.litellm()  # as a chat's first request would, with the import under way
        print(json.dumps({"completion": callable(getattr(module, "completion", None)),
                          "quiet": module.suppress_debug_info}))
    """, tmp_path)
    assert result == {"completion": True, "quiet": True}


def test_a_chat_that_waits_for_the_import_says_so_first_and_only_then(tmp_path: Path) -> None:
    # The chat asks only whether the import's thread still runs: a thread that waits on a
    # gate and imports nothing is that import under way (litellm's whole import, ~5 s of
    # CPU, proves nothing more here: the chat that needs the module is the test above).
    result, _ = python("""
        from nbagent import Agent
        from nbagent.testing import ScriptedModel, reply
        gate = threading.Event()
        door._import_quietly = gate.wait  # an import still under way until the gate opens
        door.import_in_background()
        agent = Agent(model=ScriptedModel([reply("one"), reply("two")]), archive=False,
                      namespace={})
        seen = []
        agent.events.subscribe(lambda event: seen.append(getattr(event, "text", "")))
        first = agent.chat("hello").text
        lines = [line for line in seen if "provider library" in line]
        gate.set()
        [t.join() for t in threading.enumerate() if t.name == "nbagent-import-litellm"]
        seen.clear()
        agent.chat("again")
        print(json.dumps({"first": first, "lines": lines,
                          "later": [line for line in seen if "provider library" in line]}))
    """, tmp_path)
    assert result["first"] == "one"
    assert result["lines"] == ["loading the provider library (litellm), once per kernel…"]
    assert result["later"] == []  # imported: the next chat has nothing to wait for


def test_an_import_that_fails_fails_neither_the_load_nor_anything_after_it(
        tmp_path: Path) -> None:
    result, stderr = python("""
        import builtins
        real_import = builtins.__import__

        def refusing(name, *args, **kwargs):
            if name == "litellm":
                raise ImportError("no litellm here")
            return real_import(name, *args, **kwargs)

        def join_imports():
            for thread in threading.enumerate():
                if thread.name == "nbagent-import-litellm":
                    thread.join()

        builtins.__import__ = refusing  # as if litellm could not be imported
        shell.run_line_magic("load_ext", "nbagent")
        join_imports()
        retry = door.import_in_background()  # nothing imported, nothing under way: again
        join_imports()
        builtins.__import__ = real_import
        print(json.dumps({"loaded": "chat" in shell.magics_manager.magics["cell"],
                          "litellm": "litellm" in sys.modules, "retry": retry is not None}))
    """, tmp_path)
    assert result == {"loaded": True, "litellm": False, "retry": True}
    assert "Traceback" not in stderr and "Exception in thread" not in stderr


@pytest.mark.parametrize("model", ["openai/gpt-4o-mini", "local"], ids=["hosted", "embedded"])
def test_litellm_is_not_imported_by_building_the_session(model: str, tmp_path: Path) -> None:
    """What the background import saves is not paid anyway by the load: building the
    session (what `warm_start` does) leaves litellm unimported, whichever the model."""
    result, _ = python(f"""
        import os
        os.environ["NBAGENT_MODEL"] = {model!r}
        import nbagent
        agent = nbagent.current()
        print(json.dumps({{"litellm": "litellm" in sys.modules}}))
    """, tmp_path)
    assert result == {"litellm": False}


@pytest.mark.slow  # three fresh interpreters, one importing litellm
@pytest.mark.parametrize(("name", "asks"), [(None, False), ("offline/analyst", False),
                                            ("gpt-4o-mini", True)],
                         ids=["scripted", "offline", "named-after-a-real-model"])
def test_a_stand_ins_kernel_imports_litellm_only_for_a_real_models_name(
        name: str | None, asks: bool, tmp_path: Path) -> None:
    """A kernel whose session is one of nbagent's stand-ins under its own name before the
    load (as the suite's shared kernels are) needs no litellm: the load starts no import,
    and chatting, compacting and %context never ask litellm about a name it cannot know
    (its import is seconds of CPU in each such kernel). A stand-in named after a real model
    is that model to the window and prices: the load starts the import."""
    result, _ = python(f"""
        import nbagent
        from nbagent.testing import ScriptedModel, reply
        options = {{"name": {name!r}}} if {name!r} else {{}}
        model = ScriptedModel([reply("one"), reply("two")], default=reply("notes"), **options)
        nbagent.set_current(nbagent.Agent(model=model, namespace=shell.user_ns))
        started = []
        door.import_in_background = lambda: started.append(True)
        shell.run_line_magic("load_ext", "nbagent")
        shell.run_cell("%%chat\\nhello")
        shell.run_cell("%%chat\\nagain")
        shell.run_cell("%compact")
        shell.run_cell("%context")
        print(json.dumps({{"started": bool(started), "litellm": "litellm" in sys.modules}}))
    """, tmp_path)
    assert result == {"started": asks, "litellm": asks}


def test_a_chat_loads_no_widget_library_and_the_meter_widget_loads_it(tmp_path: Path) -> None:
    """The interactive meter is an extra (`%nbagent meter`): anywidget and ipywidgets under it
    (~3.5 MB in a kernel) load when it is asked for, not with the magics or a chat, whose
    meter is a plain line (issue 44: kernel memory)."""
    result, _ = python("""
        from nbagent import Agent, set_current
        from nbagent.testing import ScriptedModel, reply
        door.import_in_background = lambda: None  # litellm is not what this test watches
        libraries = ("anywidget", "ipywidgets")
        shell.run_line_magic("load_ext", "nbagent")
        set_current(Agent(model=ScriptedModel([reply("one")]), archive=False, namespace={}))
        shell.run_cell_magic("chat", "", "hi")
        chatted = [name for name in libraries if name in sys.modules]
        shell.run_line_magic("nbagent", "meter")
        print(json.dumps({"chatted": chatted,
                          "meter": [name for name in libraries if name in sys.modules]}))
    """, tmp_path)
    assert result == {"chatted": [], "meter": ["anywidget", "ipywidgets"]}
