"""What the compaction tests share: a small data-science session (a frame printed, a
traceback, the user's decisions), a python tool round, the names its floor must keep."""

from __future__ import annotations

import json
from typing import Any

from nbagent.compaction import extract_floor, notebook_note
from tests.helpers import SYSTEM, tool_round

Messages = list[dict[str, Any]]


KNOBS = {"tail_min_tokens": 600, "tail_max_tokens": 1_200, "tail_min_messages": 4}


def python_round(t: int, ask: str, code: str, output: str, answer: str = "Done.") -> Messages:
    call = {"id": f"py-{t}", "type": "function",
            "function": {"name": "python", "arguments": json.dumps({"code": code})}}
    return [{"role": "user", "content": ask},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"py-{t}", "content": output},
            {"role": "assistant", "content": answer}]


def names(messages: Messages) -> set[str]:
    return set(extract_floor(messages).names)


FRAME = """      account_ref  signup_day  plan_tier    mrr
0          A-1001  2021-03-04      basic  29.00
1          A-1002  2021-03-09        pro  99.00"""


INFO = """<class 'pandas.core.frame.DataFrame'>
RangeIndex: 4812 entries, 0 to 4811
 #   Column       Non-Null Count  Dtype
 0   visit_id     4812 non-null   int64
 1   clinic       4790 non-null   object"""


TRACEBACK = """Traceback (most recent call last):
  File "/usr/lib/python3.12/site-packages/pandas/core/indexes/base.py", line 3805, in get_loc
KeyError: 'dosage_mg'"""


def data_session() -> Messages:
    messages: Messages = [SYSTEM]
    messages += python_round(0, "Load data/trial/visits.csv please.",
                             "visits = pd.read_csv('data/trial/visits.csv')\nvisits.head()", FRAME)
    messages += python_round(1, "Average dose?", "visits['dosage_mg'].mean()", TRACEBACK,
                             "The column is dose_mg; dosage_mg raised a KeyError.")
    messages += python_round(2, "Use dose_mg. From now on exclude the pilot clinic.",
                             "visits = visits[visits.clinic != 'pilot']", "(4100, 9)")
    for t in range(3, 12):
        messages += tool_round(t)
    return messages


FLOOR_NAMES = {"data/trial/visits.csv", "visits", "account_ref", "plan_tier", "dosage_mg"}


def turn(n: int, state: str | None) -> Messages:
    """A question and its answer, with a notebook note of `state` between them (if any)."""
    messages: Messages = [{"role": "user", "content": f"question {n} about sales"}]
    if state is not None:
        note = notebook_note([], state)
        assert note is not None
        messages.append(note)
    return [*messages, {"role": "assistant", "content": f"answer {n}"}]
