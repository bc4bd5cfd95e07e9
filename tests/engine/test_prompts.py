"""Snapshots of the exact requests the compaction levels send to a summarizer, so any
change to a prompt shows up as a diff in review.

Regenerate after a deliberate change: `UPDATE_SNAPSHOTS=1 python -m pytest
tests/engine/test_prompts.py -s` rewrites the expected texts at the end of this file (and prints
them); read the diff before committing it.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from nbagent.compaction import LevelResult, full_compact, session_memory_compact
from nbagent.testing import ScriptedSummarizer
from tests.helpers import nine_sections

Message = dict[str, Any]
UPDATE = bool(os.environ.get("UPDATE_SNAPSHOTS"))


def call(call_id: str, name: str, arguments: dict[str, Any]) -> Message:
    return {"role": "assistant", "content": None, "tool_calls": [{
        "id": call_id, "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def result(call_id: str, text: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def long_numbers(start: int) -> str:
    """One long line of numbers: a tool result long enough that folding it saves tokens
    (a summarizer sees only its head and tail)."""
    return " ".join(f"{start + n / 4:.2f}" for n in range(400))


SESSION: list[Message] = [
    {"role": "system", "content": "You are a careful data analyst."},
    {"role": "user", "content": "Load data/sales.csv into sales_df and tell me its columns."},
    call("call-1", "read_file", {"path": "data/sales.csv"}),
    result("call-1", "columns: region, revenue, units; revenue: " + long_numbers(1000)),
    {"role": "assistant", "content": "sales_df has columns region, revenue and units."},
    {"role": "user", "content": "Drop the rows from the old pilot; they are not comparable."},
    call("call-2", "python", {"code": "sales_df = sales_df[sales_df.region != 'pilot']"}),
    result("call-2", "KeyError: 'pilot_flag'"),
    {"role": "assistant", "content": "Done: I filtered on region, since pilot_flag is missing."},
    {"role": "user", "content": "Now plot revenue by region."},
    {"role": "assistant", "content": "Here is the bar chart of revenue by region."},
]


def analysis(call_id: str, question: str, code: str, answer: str) -> list[Message]:
    """A round whose tool result is long enough that folding it saves tokens."""
    table = "revenue_per_unit by row: " + long_numbers(100)
    return [{"role": "user", "content": question}, call(call_id, "python", {"code": code}),
            result(call_id, table), {"role": "assistant", "content": answer}]


SECOND_PART = [
    *analysis("call-3", "Add a column revenue_per_unit = revenue / units.",
              "sales_df['revenue_per_unit'] = sales_df.revenue / sales_df.units",
              "Added revenue_per_unit to sales_df."),
    {"role": "user", "content": "Which region has the highest revenue_per_unit?"},
    {"role": "assistant", "content": "north, at 120.05 per unit."},
]
NOTES = "- sales_df loaded from data/sales.csv; pilot rows dropped by region."


def rendered(request: list[Message]) -> str:
    """A request as text: each message's role, then its content."""
    return "\n\n".join(f"<{m['role']}>\n{m['content']}\n</{m['role']}>" for m in request)


def fold(messages: list[Message], summarize: ScriptedSummarizer, **options: Any) -> LevelResult:
    """L2 with a small tail, so these short sessions fold all but their last round."""
    folded = session_memory_compact(messages, summarize, tail_min_tokens=1, tail_max_tokens=1,
                                    tail_min_messages=1, **options)
    assert folded.changed, folded.reason
    return folded


def check(name: str, actual: str) -> None:
    if UPDATE:
        _rewrite(name, actual)
        print(f"\n----- {name} -----\n{actual}")
        return
    assert actual == globals()[name], (
        f"{name} changed; if on purpose, regenerate with UPDATE_SNAPSHOTS=1 (see the module "
        "docstring) and review the diff")


def _rewrite(name: str, actual: str) -> None:
    path = Path(__file__)
    source = path.read_text(encoding="utf-8")
    escaped = actual.replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    literal = '"""\\\n' + escaped + '\\\n"""'  # backslash-newline: no extra newlines
    pattern = re.compile(rf'^{name} = """.*?\n"""$', re.DOTALL | re.MULTILINE)
    if pattern.search(source):
        source = pattern.sub(lambda _: f"{name} = {literal}", source, count=1)
    else:
        source = source.rstrip("\n") + f"\n\n{name} = {literal}\n"
    path.write_text(source, encoding="utf-8")


def test_the_memory_prompt_for_a_first_fold() -> None:
    summarize = ScriptedSummarizer([NOTES])
    fold(SESSION, summarize)
    check("MEMORY_FIRST", rendered(summarize.requests[0]))


def test_the_memory_prompt_with_a_focus() -> None:
    summarize = ScriptedSummarizer([NOTES])
    fold(SESSION, summarize, focus="keep the column names")
    check("MEMORY_FOCUS", rendered(summarize.requests[0]))


def test_the_memory_prompt_shows_the_memory_so_far() -> None:
    summarize = ScriptedSummarizer([NOTES, "- revenue_per_unit added; north is highest."])
    once = fold(SESSION, summarize)
    fold([*once, *SECOND_PART], summarize)
    check("MEMORY_SECOND", rendered(summarize.requests[1]))


def test_the_memory_retry_after_unusable_notes() -> None:
    summarize = ScriptedSummarizer(["Sure! We had a productive conversation.", NOTES])
    fold(SESSION, summarize)
    check("MEMORY_RETRY", rendered(summarize.requests[1][-2:]))


def test_the_memory_merge_prompt() -> None:
    summarize = ScriptedSummarizer(
        [NOTES, "- revenue_per_unit added to sales_df.", "- north has the top revenue_per_unit.",
         "- sales_df: pilot rows dropped; revenue_per_unit added; north highest."])
    history = fold(SESSION, summarize)
    for n, (ask, code) in enumerate((
            ("Sort sales_df by revenue_per_unit.", "sales_df.sort_values('revenue_per_unit')"),
            ("Save it to out/sales_clean.parquet.", "sales_df.to_parquet('out/sales.parquet')"),
    )):
        history = fold([*history, *analysis(f"call-{n + 4}", ask, code, "Done."),
                        {"role": "user", "content": "Thanks."},
                        {"role": "assistant", "content": "You're welcome."}],
                       summarize, memory_max_tokens=1, floor_tokens_budget=40)
    assert "merged the later memory blocks into one" in history.reason
    check("MEMORY_MERGE", rendered(summarize.requests[-1]))


def test_the_summary_prompt() -> None:
    summarize = ScriptedSummarizer([nine_sections()])
    assert full_compact(SESSION, summarize).changed
    check("SUMMARY", rendered(summarize.requests[0]))


def test_the_summary_prompt_with_a_focus() -> None:
    summarize = ScriptedSummarizer([nine_sections()])
    assert full_compact(SESSION, summarize, focus="keep the column names").changed
    check("SUMMARY_FOCUS", rendered(summarize.requests[0]))


def test_the_summary_retry_after_an_invalid_summary() -> None:
    summarize = ScriptedSummarizer(["Sure! We had a productive conversation.", nine_sections()])
    assert full_compact(SESSION, summarize).changed
    check("SUMMARY_RETRY", rendered(summarize.requests[1][-2:]))


@pytest.mark.skipif(UPDATE, reason="updating the snapshots")
def test_every_snapshot_is_used() -> None:
    names = set(re.findall(r'^([A-Z_]+) = """', Path(__file__).read_text(), re.MULTILINE))
    used = set(re.findall(r'check\("([A-Z_]+)"', Path(__file__).read_text()))
    assert names == used


# The snapshots: written by UPDATE_SNAPSHOTS=1 (see the module docstring), not by hand.

MEMORY_FIRST = """\
<system>
You keep the working memory of a long conversation between a data scientist and an AI assistant in a Jupyter notebook. Write terse notes the assistant can continue from: goals, decisions, exact names (files, variables, columns), results, errors and their fixes, open tasks.
</system>

<user>
Here is the memory so far (for context only; do not repeat it):
<memory>
(empty: the first part)
</memory>

Write the notes to add for this new part of the conversation:
<conversation>
[user]
Load data/sales.csv into sales_df and tell me its columns.

[assistant calls read_file (call-1)] {"path": "data/sales.csv"}

[tool result call-1]
columns: region, revenue, units; revenue: 1000.00 1000.25 1000.50 1000.75 1001.00 1001.25 1001.50 1001.75 1002.00 1002.25 1002.50 1002.75 1003.00 1003.25 1003.50 1003.75 1004.00 1004.25 1004.50 1004.75 1005.00 1005.25 1005.50 1005.75 1006.00 1006.25 1006.50 1006.75 1007.00 1007.25 1007.50 1007.75 10
[... 2,641 characters omitted ...]
0.50 1090.75 1091.00 1091.25 1091.50 1091.75 1092.00 1092.25 1092.50 1092.75 1093.00 1093.25 1093.50 1093.75 1094.00 1094.25 1094.50 1094.75 1095.00 1095.25 1095.50 1095.75 1096.00 1096.25 1096.50 1096.75 1097.00 1097.25 1097.50 1097.75 1098.00 1098.25 1098.50 1098.75 1099.00 1099.25 1099.50 1099.75

[assistant]
sales_df has columns region, revenue and units.

[user]
Drop the rows from the old pilot; they are not comparable.

[assistant calls python (call-2)] {"code": "sales_df = sales_df[sales_df.region != 'pilot']"}

[tool result call-2]
KeyError: 'pilot_flag'

[assistant]
Done: I filtered on region, since pilot_flag is missing.
</conversation>
</user>\
"""

MEMORY_FOCUS = """\
<system>
You keep the working memory of a long conversation between a data scientist and an AI assistant in a Jupyter notebook. Write terse notes the assistant can continue from: goals, decisions, exact names (files, variables, columns), results, errors and their fixes, open tasks.
</system>

<user>
Here is the memory so far (for context only; do not repeat it):
<memory>
(empty: the first part)
</memory>

Write the notes to add for this new part of the conversation:
<conversation>
[user]
Load data/sales.csv into sales_df and tell me its columns.

[assistant calls read_file (call-1)] {"path": "data/sales.csv"}

[tool result call-1]
columns: region, revenue, units; revenue: 1000.00 1000.25 1000.50 1000.75 1001.00 1001.25 1001.50 1001.75 1002.00 1002.25 1002.50 1002.75 1003.00 1003.25 1003.50 1003.75 1004.00 1004.25 1004.50 1004.75 1005.00 1005.25 1005.50 1005.75 1006.00 1006.25 1006.50 1006.75 1007.00 1007.25 1007.50 1007.75 10
[... 2,641 characters omitted ...]
0.50 1090.75 1091.00 1091.25 1091.50 1091.75 1092.00 1092.25 1092.50 1092.75 1093.00 1093.25 1093.50 1093.75 1094.00 1094.25 1094.50 1094.75 1095.00 1095.25 1095.50 1095.75 1096.00 1096.25 1096.50 1096.75 1097.00 1097.25 1097.50 1097.75 1098.00 1098.25 1098.50 1098.75 1099.00 1099.25 1099.50 1099.75

[assistant]
sales_df has columns region, revenue and units.

[user]
Drop the rows from the old pilot; they are not comparable.

[assistant calls python (call-2)] {"code": "sales_df = sales_df[sales_df.region != 'pilot']"}

[tool result call-2]
KeyError: 'pilot_flag'

[assistant]
Done: I filtered on region, since pilot_flag is missing.

(The user asks the memory to focus on: keep the column names)
</conversation>
</user>\
"""

MEMORY_SECOND = """\
<system>
You keep the working memory of a long conversation between a data scientist and an AI assistant in a Jupyter notebook. Write terse notes the assistant can continue from: goals, decisions, exact names (files, variables, columns), results, errors and their fixes, open tasks.
</system>

<user>
Here is the memory so far (for context only; do not repeat it):
<memory>
[nbagent session memory; the full transcript is archived: recall finds any detail]
- sales_df loaded from data/sales.csv; pilot rows dropped by region.

User messages (verbatim; […] marks a shortened one: recall(query="its first words") returns it whole):
- Load data/sales.csv into sales_df and tell me its columns.
- Drop the rows from the old pilot; they are not comparable.
Names: pilot, sales_df.region, pilot_flag
Error lines:
- KeyError: 'pilot_flag'
</memory>

Write the notes to add for this new part of the conversation:
<conversation>
[user]
Now plot revenue by region.

[assistant]
Here is the bar chart of revenue by region.

[user]
Add a column revenue_per_unit = revenue / units.

[assistant calls python (call-3)] {"code": "sales_df['revenue_per_unit'] = sales_df.revenue / sales_df.units"}

[tool result call-3]
revenue_per_unit by row: 100.00 100.25 100.50 100.75 101.00 101.25 101.50 101.75 102.00 102.25 102.50 102.75 103.00 103.25 103.50 103.75 104.00 104.25 104.50 104.75 105.00 105.25 105.50 105.75 106.00 106.25 106.50 106.75 107.00 107.25 107.50 107.75 108.00 108.25 108.50 108.75 109.00 109.25 109.50 10
[... 2,224 characters omitted ...]
189.25 189.50 189.75 190.00 190.25 190.50 190.75 191.00 191.25 191.50 191.75 192.00 192.25 192.50 192.75 193.00 193.25 193.50 193.75 194.00 194.25 194.50 194.75 195.00 195.25 195.50 195.75 196.00 196.25 196.50 196.75 197.00 197.25 197.50 197.75 198.00 198.25 198.50 198.75 199.00 199.25 199.50 199.75

[assistant]
Added revenue_per_unit to sales_df.
</conversation>
</user>\
"""

MEMORY_RETRY = """\
<assistant>
Sure! We had a productive conversation.
</assistant>

<user>
That reply is not usable: the notes name nothing from the conversation (no file, variable or column). Write the notes again: the goals, decisions, results and open tasks, naming the exact files, variables and columns.
</user>\
"""

MEMORY_MERGE = """\
<system>
You keep the working memory of a long conversation between a data scientist and an AI assistant in a Jupyter notebook. Write terse notes the assistant can continue from: goals, decisions, exact names (files, variables, columns), results, errors and their fixes, open tasks.
</system>

<user>
Merge these memory notes into one shorter memory that keeps every goal, decision, exact name, result and open task:
<memory>
- revenue_per_unit added to sales_df.

- north has the top revenue_per_unit.
</memory>
</user>\
"""

SUMMARY = """\
<system>
You write the working summary of a conversation between a data scientist and an AI assistant working in a Jupyter notebook. The assistant will continue from your summary alone, so keep every detail it needs: exact names, numbers, paths and decisions.
</system>

<user>
Summarize the conversation below. Reply with exactly these nine sections, each under a markdown heading with its number and title, in this order:

## 1. Primary Request and Intent
## 2. Key Technical Concepts
## 3. Files and Code Sections
## 4. Errors and fixes
## 5. Problem Solving
## 6. All user messages
## 7. Pending Tasks
## 8. Current Work
## 9. Optional Next Step

Each section must have content (write "None." when there is nothing to say). Quote file paths, variable and column names exactly. "All user messages" lists every user message.

<conversation>
[user]
Load data/sales.csv into sales_df and tell me its columns.

[assistant calls read_file (call-1)] {"path": "data/sales.csv"}

[tool result call-1]
columns: region, revenue, units; revenue: 1000.00 1000.25 1000.50 1000.75 1001.00 1001.25 1001.50 1001.75 1002.00 1002.25 1002.50 1002.75 1003.00 1003.25 1003.50 1003.75 1004.00 1004.25 1004.50 1004.75 1005.00 1005.25 1005.50 1005.75 1006.00 1006.25 1006.50 1006.75 1007.00 1007.25 1007.50 1007.75 10
[... 2,641 characters omitted ...]
0.50 1090.75 1091.00 1091.25 1091.50 1091.75 1092.00 1092.25 1092.50 1092.75 1093.00 1093.25 1093.50 1093.75 1094.00 1094.25 1094.50 1094.75 1095.00 1095.25 1095.50 1095.75 1096.00 1096.25 1096.50 1096.75 1097.00 1097.25 1097.50 1097.75 1098.00 1098.25 1098.50 1098.75 1099.00 1099.25 1099.50 1099.75

[assistant]
sales_df has columns region, revenue and units.

[user]
Drop the rows from the old pilot; they are not comparable.

[assistant calls python (call-2)] {"code": "sales_df = sales_df[sales_df.region != 'pilot']"}

[tool result call-2]
KeyError: 'pilot_flag'

[assistant]
Done: I filtered on region, since pilot_flag is missing.

[user]
Now plot revenue by region.

[assistant]
Here is the bar chart of revenue by region.
</conversation>
</user>\
"""

SUMMARY_FOCUS = """\
<system>
You write the working summary of a conversation between a data scientist and an AI assistant working in a Jupyter notebook. The assistant will continue from your summary alone, so keep every detail it needs: exact names, numbers, paths and decisions.
</system>

<user>
Summarize the conversation below. Reply with exactly these nine sections, each under a markdown heading with its number and title, in this order:

## 1. Primary Request and Intent
## 2. Key Technical Concepts
## 3. Files and Code Sections
## 4. Errors and fixes
## 5. Problem Solving
## 6. All user messages
## 7. Pending Tasks
## 8. Current Work
## 9. Optional Next Step

Each section must have content (write "None." when there is nothing to say). Quote file paths, variable and column names exactly. "All user messages" lists every user message.

The user asked this summary to focus on: keep the column names

<conversation>
[user]
Load data/sales.csv into sales_df and tell me its columns.

[assistant calls read_file (call-1)] {"path": "data/sales.csv"}

[tool result call-1]
columns: region, revenue, units; revenue: 1000.00 1000.25 1000.50 1000.75 1001.00 1001.25 1001.50 1001.75 1002.00 1002.25 1002.50 1002.75 1003.00 1003.25 1003.50 1003.75 1004.00 1004.25 1004.50 1004.75 1005.00 1005.25 1005.50 1005.75 1006.00 1006.25 1006.50 1006.75 1007.00 1007.25 1007.50 1007.75 10
[... 2,641 characters omitted ...]
0.50 1090.75 1091.00 1091.25 1091.50 1091.75 1092.00 1092.25 1092.50 1092.75 1093.00 1093.25 1093.50 1093.75 1094.00 1094.25 1094.50 1094.75 1095.00 1095.25 1095.50 1095.75 1096.00 1096.25 1096.50 1096.75 1097.00 1097.25 1097.50 1097.75 1098.00 1098.25 1098.50 1098.75 1099.00 1099.25 1099.50 1099.75

[assistant]
sales_df has columns region, revenue and units.

[user]
Drop the rows from the old pilot; they are not comparable.

[assistant calls python (call-2)] {"code": "sales_df = sales_df[sales_df.region != 'pilot']"}

[tool result call-2]
KeyError: 'pilot_flag'

[assistant]
Done: I filtered on region, since pilot_flag is missing.

[user]
Now plot revenue by region.

[assistant]
Here is the bar chart of revenue by region.
</conversation>
</user>\
"""

SUMMARY_RETRY = """\
<assistant>
Sure! We had a productive conversation.
</assistant>

<user>
That reply is not usable: missing sections: Primary Request and Intent, Key Technical Concepts, Files and Code Sections, Errors and fixes, Problem Solving, All user messages, Pending Tasks, Current Work, Optional Next Step. Write it again with all nine sections, each under its own heading.
</user>\
"""
