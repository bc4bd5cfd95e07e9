"""A 1,000-turn soak with the scripted model: the history stays within the window,
the archive grows, memory does not grow with it, and every compaction is
reversible from the archive.

    python bench/soak.py          # prints the figures and updates docs/reliability.md
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
from nbagent.agent.archive._archive import Archive, read_records
from nbagent.engine._markers import is_block, is_pins
from nbagent.testing import ScriptedModel, ScriptedSummarizer, Step, calls, reply

WINDOW = 16_384
TEST_TURNS = 300  # tests/reliability/test_soak.py's length (its figures come from here)
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

    return "\n\n".join(f"## {n}. {t}\n- sales_df.revenue_usd measured step by step"
                       for n, t in enumerate(SECTIONS, 1))


def run(turns: int = 1_000, directory: Path | None = None) -> Soak:
    directory = directory or Path(tempfile.mkdtemp())

    @tool
    def measure(step: int) -> str:
        """Measure one step."""
        return "\n".join(f"step {step} row {i}: revenue_usd " + "4.25 " * 12 for i in range(40))

    def respond(messages: list[dict[str, Any]]) -> Step:
        last = [m for m in messages if not is_block(m)][-1]  # past a notebook-state block
        if last["role"] == "tool":
            return reply("The step looks normal; the mean is 4.25.")
        return calls(("measure", {"step": len(messages)}))

    model = ScriptedModel(default=respond, record=False)
    agent = Agent(model=model, tools=[measure], builtin_tools=False, namespace={},
                  settings=Settings(max_context_tokens=WINDOW), archive=False,
                  summarize=ScriptedSummarizer(default=summary, record=False))
    agent.session.attach_archive(lambda: Archive(agent.session_id, directory))
    peak_tokens = 0
    quarter = 0
    for turn in range(turns):
        if turn == 1:  # after the first turn's imports (litellm's model table)
            tracemalloc.start()
        agent.chat(f"Turn {turn}: measure the next step of sales_df please.")
        peak_tokens = max(peak_tokens, agent.context_state().tokens)
        if turn == turns // 4:
            quarter = tracemalloc.get_traced_memory()[0]
    end = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    archive = agent.session.archive
    assert archive is not None
    archived = list(read_records(archive.path))
    added = [r["message"] for r in archived if r["kind"] == "message"]
    seen = {json.dumps(m, sort_keys=True) for m in added}
    results = {m["tool_call_id"] for m in added if m["role"] == "tool"}
    reversible = all(  # each message a compaction kept is archived, or stands for archived ones
        json.dumps(m, sort_keys=True) in seen or is_block(m) or is_pins(m)
        or (m["role"] == "tool" and m["tool_call_id"] in results)  # snipped or collapsed
        for r in archived if r["kind"] == "rewrite" for m in r["messages"]
    )
    compactions = sum(1 for r in archived if r["kind"] == "decision"
                      and r["decision"]["action"] == "compacted")
    return Soak(turns, compactions, peak_tokens,
                agent.context_state().thresholds.auto_compact, quarter // 1024, end // 1024,
                resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
                archive.path.stat().st_size // 1024, len(seen), reversible)


def write_section(path: Path, name: str, body: str) -> None:
    """Replace the `name` section of a generated page (between its two markers), or
    append it; the rest of the page stays as it is."""
    start, end = f"<!-- {name}: generated, do not edit -->", f"<!-- /{name} -->"
    text = path.read_text(encoding="utf-8") if path.exists() else "# Reliability\n"
    block = f"{start}\n{body.strip()}\n{end}"
    if start in text and end in text:
        text = text[:text.index(start)] + block + text[text.index(end) + len(end):]
    else:
        text = f"{text.rstrip()}\n\n{block}\n"
    path.write_text(text, encoding="utf-8")


def main() -> int:
    soak = run()
    print(json.dumps(asdict(soak), indent=2))
    growth = (soak.traced_kib_at_end - soak.traced_kib_at_quarter) / (soak.turns * 3 / 4)
    write_section(RELIABILITY, "soak", f"""## Soak

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

The history stays under the window while the archive grows. The Python heap grows by
{growth:.2f} KiB a turn between turn {soak.turns // 4:,} and the end (each compaction's
decision record keeps its summary in memory), against {soak.archive_kib / soak.turns:.1f} KiB
a turn for the archive. `tests/reliability/test_soak.py` runs the same soak for
{TEST_TURNS} turns and asserts all of this.
""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
