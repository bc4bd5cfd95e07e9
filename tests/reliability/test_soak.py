"""A soak of a few hundred turns and a kill during compaction: nothing is lost. (The
soak's figures come from `python bench/soak.py`, 1,000 turns; this runs the same soak,
long enough for dozens of compactions and for a heap that grew with the history to show.)"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
import soak  # noqa: E402

from nbagent import Agent  # noqa: E402
from nbagent.testing import ScriptedModel, read_records, session_path  # noqa: E402

TURNS = soak.TEST_TURNS  # 300: ~125 compactions, the heap measured 225 turns after the quarter


@pytest.mark.slow
def test_hundreds_of_turns_stay_in_the_window_with_flat_memory(tmp_path: Path) -> None:
    result = soak.run(TURNS, tmp_path)
    assert result.compactions >= 10
    assert result.max_context_tokens < soak.WINDOW
    assert result.archived_messages >= 3 * TURNS  # the archive grows with the session...
    assert result.traced_kib_at_end < 1.5 * result.traced_kib_at_quarter + 512  # ...RAM does not
    assert result.reversible


@pytest.mark.real
def test_a_process_killed_mid_compaction_resumes_with_its_full_history(tmp_path: Path) -> None:
    script = textwrap.dedent("""
        import time
        from nbagent import Agent, Settings
        from nbagent.testing import ScriptedModel, reply

        def stuck(messages):
            print("COMPACTING", flush=True)
            time.sleep(120)

        agent = Agent(model=ScriptedModel(default=reply("an answer " * 40)), namespace={},
                      settings=Settings(max_context_tokens=4096),
                      summarize=stuck, session_id="killed")
        for turn in range(200):
            agent.chat(f"question {turn} " * 20)
            print(f"TURN {turn}", flush=True)
    """)
    env = {"NBAGENT_DATA_DIR": str(tmp_path), "PATH": "/usr/bin:/bin"}
    process = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                               env={**env, "PYTHONPATH": ":".join(sys.path)})
    assert process.stdout is not None
    turns = 0
    for line in process.stdout:
        if line.startswith("TURN"):
            turns += 1
        if line.startswith("COMPACTING"):
            process.kill()
            break
    process.wait(timeout=30)
    assert turns >= 1
    path = session_path("killed", tmp_path)
    archived = [r["message"] for r in read_records(path) if r["kind"] == "message"]
    resumed = Agent.resume(path, model=ScriptedModel(), namespace={})
    assert resumed.history.messages == archived  # nothing was rewritten: all of it is back
    asked = [m["content"] for m in archived if m["role"] == "user"]
    assert asked == [f"question {t} " * 20 for t in range(len(asked))] and len(asked) > turns
