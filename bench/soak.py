"""A 1,000-turn soak with the scripted model: the history stays within the window,
the archive grows, memory does not grow with it, and every compaction is
reversible from the archive.

    python bench/soak.py          # prints the figures and writes docs/reliability.md
"""

from __future__ import annotations

import json
import resource
import sys
import tempfile
import tracemalloc
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nbagent import Agent, Settings, tool
from nbagent._archive import Archive, read_records
from nbagent._markers import is_memory, is_summary
from nbagent.testing import ScriptedModel, ScriptedSummarizer, calls, reply

WINDOW = 16_384
RELIABILITY = Path(__file__).parents[1] / "docs" / "reliability.md"


@dataclass
class Soak:
    turns: int
    compactions: int
    max_context_tokens: int
    auto_compact_trigger: int
    traced_kib_at_quarter: int
    traced_kib_at_end: int
    peak_rss_mib: int
    archive_kib: int
    archived_messages: int
    reversible: bool


def summary(messages: list[dict[str, Any]]) -> str:
    from nbagent.compaction import SECTIONS

    return "\n\n".join(f"## {n}. {t}\n- notes" for n, t in enumerate(SECTIONS, 1))


def run(turns: int = 1_000, directory: Path | None = None) -> Soak:
    directory = directory or Path(tempfile.mkdtemp())

    @tool
    def measure(step: int) -> str:
        """Measure one step."""
        return "\n".join(f"step {step} row {i}: " + "4.25 " * 12 for i in range(40))

    model = ScriptedModel(default=lambda messages: (
        calls(("measure", {"step": len(messages)})) if messages[-1]["role"] == "user"
        else reply("The step looks normal; the mean is 4.25.")), record=False)
    agent = Agent(model=model, tools=[measure], builtin_tools=False, namespace={},
                  settings=Settings(max_context_tokens=WINDOW), archive=False,
                  summarize=ScriptedSummarizer(default=summary, record=False))
    agent.session.attach_archive(lambda: Archive(agent.session_id, directory))
    tracemalloc.start()
    peak_tokens = 0
    quarter = 0
    for turn in range(turns):
        agent.chat(f"Turn {turn}: measure the next step please.")
        peak_tokens = max(peak_tokens, agent.context_state().tokens)
        if turn == turns // 4:
            quarter = tracemalloc.get_traced_memory()[0]
    end = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    archived = list(read_records(agent.archive.path))
    seen = {json.dumps(r["message"], sort_keys=True) for r in archived if r["kind"] == "message"}
    reversible = all(
        json.dumps(m, sort_keys=True) in seen
        for r in archived if r["kind"] == "rewrite"
        for m in r["messages"] if not (is_memory(m) or is_summary(m))
    )
    compactions = sum(1 for r in archived if r["kind"] == "decision"
                      and r["decision"]["action"] == "compacted")
    return Soak(turns, compactions, peak_tokens,
                agent.context_state().thresholds.auto_compact, quarter // 1024, end // 1024,
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                agent.archive.path.stat().st_size // 1024, len(seen), reversible)


def main() -> int:
    soak = run()
    print(json.dumps(asdict(soak), indent=2))
    RELIABILITY.write_text(f"""# Reliability

Figures from `python bench/soak.py`: {soak.turns:,} scripted turns (each a tool call and
an answer) on a {WINDOW:,}-token window, with the session archive on disk.

| figure | value |
|---|---:|
| turns | {soak.turns:,} |
| compactions | {soak.compactions:,} |
| largest context seen (tokens) | {soak.max_context_tokens:,} |
| auto-compact trigger (tokens) | {soak.auto_compact_trigger:,} |
| Python heap after {soak.turns // 4:,} turns (tracemalloc) | {soak.traced_kib_at_quarter:,} KiB |
| Python heap after {soak.turns:,} turns | {soak.traced_kib_at_end:,} KiB |
| peak RSS of the process | {soak.peak_rss_mib:,} MiB |
| archive size | {soak.archive_kib:,} KiB ({soak.archived_messages:,} distinct messages) |
| every compaction reversible from the archive | {"yes" if soak.reversible else "NO"} |

The history stays under the window while the archive grows; memory does not grow
with the archive. `tests/reliability/` runs the same soak and asserts all of this.
""", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
