"""Replay reads only what decides the state (from the last rewrite on, and the few kinds
before it), and gives exactly what reading every record through the table gives."""

from __future__ import annotations

from pathlib import Path

from nbagent import Agent, Settings
from nbagent.agent.archive import read_lines, replay
from nbagent.testing import ScriptedModel, ScriptedSummarizer, reply
from tests.agent.archive.replaying import every_record
from tests.helpers import nine_sections


def long_session(tmp_path: Path, *, end_on_compaction: bool) -> Path:
    agent = Agent(model=ScriptedModel(default=reply("a long answer " * 60)), namespace={},
                  builtin_tools=False, settings=Settings(max_context_tokens=8_192,
                                                         data_dir=str(tmp_path)),
                  summarize=ScriptedSummarizer(default=nine_sections()))
    for turn in range(14):  # several automatic compactions on the way
        agent.chat(f"question {turn} " * 30, exchange=f"cell-{turn % 4}")
        agent.session.store.put(f"out-{turn}", f"output {turn} " * 50)
    if end_on_compaction:
        assert agent.compact().action == "compacted"
    agent.session.close()
    path = agent.session.archive.path  # type: ignore[union-attr]
    assert sum(r["kind"] == "rewrite" for _, _, r in read_lines(path)) >= 3
    return path


def test_replay_from_the_last_rewrite_equals_reading_every_record(tmp_path: Path) -> None:
    for end_on_compaction in (False, True):
        path = long_session(tmp_path / str(end_on_compaction),
                            end_on_compaction=end_on_compaction)
        fast, full = replay(path), every_record(path)
        assert fast.messages == full.messages
        assert fast.exchanges == full.exchanges and len(fast.exchanges) == 4
        assert fast.undo == full.undo and (fast.undo is not None) is end_on_compaction
        assert dict(fast.outputs.items()) == {ref: f"output {n} " * 50 for n, ref in
                                              enumerate(f"out-{n}" for n in range(14))}
        assert (fast.failures, fast.sequence, fast.model) == (full.failures, full.sequence,
                                                              full.model)
