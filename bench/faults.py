"""The fault matrix and the hostile-input corpus as tables: runs the two test modules of
`tests/reliability/` (the same checks the test command runs), counts what survived, and
writes the tables into docs/reliability.md (its "faults" section; the soak keeps its own).

    python bench/faults.py        # prints the tables and updates docs/reliability.md
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
from soak import RELIABILITY, write_section  # noqa: E402

ROOT = Path(__file__).parents[1]
FAULTS = "tests/reliability/test_faults.py"
HOSTILE = "tests/reliability/test_hostile_inputs.py"
MATRIX_TEST = "test_a_fault_leaves_a_valid_resumable_session"
# What each hostile-input test tries, and what "handled" means for it.
GROUPS = {
    "test_odd_text_in_a_user_message_is_kept_exactly":
        ("odd text in a user message", "kept exactly (history, archive, resume, recall); "
         "a 1 MB line is not sent, with a clear message"),
    "test_odd_text_in_a_tool_output_is_kept_exactly":
        ("odd text in a tool output", "kept exactly; a long one capped, whole in the archive"),
    "test_odd_text_in_tool_arguments_reaches_the_tool_exactly":
        ("odd text in tool arguments", "reaches the tool exactly; archived exactly"),
    "test_two_lone_surrogate_halves_in_a_row_come_back_as_two":
        ("two surrogate halves in a row", "kept exactly"),
    "test_recall_finds_text_with_quotes_backslashes_and_newlines":
        ("recall queries with quotes, backslashes, newlines", "found"),
    "test_an_undecodable_file_name_is_named_in_the_compaction_floor":
        ("an undecodable file name through compaction", "named in the floor"),
    "test_malformed_model_output_is_repaired_or_answered_with_a_readable_error":
        ("malformed model output", "repaired, or an error result the model can read"),
    "test_absurdly_nested_arguments_get_a_clear_error":
        ("50,000-deep JSON arguments", "an error result the model can read"),
    "test_whatever_a_tool_returns_becomes_a_readable_result":
        ("odd tool return values", "a readable result"),
    "test_a_window_smaller_than_the_system_prompt_and_tools_is_a_clear_stop":
        ("a window smaller than the system prompt + tools", "a clear stop, nothing sent"),
    "test_list_variables_lists_every_variable_whatever_its_probes_do":
        ("variables whose shape raises, len() is slow", "listed; len() never called"),
}


@dataclass
class Collector:
    """A pytest plugin keeping each test's outcome: "passed", "failed" or "xfail"."""

    outcomes: dict[str, str] = field(default_factory=dict)
    reasons: dict[str, str] = field(default_factory=dict)

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.when == "setup" and not report.passed):
            return
        if hasattr(report, "wasxfail") and report.skipped:
            self.outcomes[report.nodeid] = "xfail"
            self.reasons[report.nodeid] = str(report.wasxfail).removeprefix("reason: ")
        elif report.skipped:
            self.outcomes[report.nodeid] = "skipped"
        else:
            self.outcomes[report.nodeid] = "passed" if report.passed else "failed"


def split(nodeid: str) -> tuple[str, str]:
    """(test function, parameter id) of a node id."""
    name = nodeid.split("::")[-1]
    function, _, parameter = name.partition("[")
    return function, parameter.removesuffix("]")


def matrix_table(collector: Collector) -> tuple[str, int, int, int]:
    cells: dict[tuple[str, str], str] = {}
    faults: list[str] = []
    places: list[str] = []
    for nodeid, outcome in collector.outcomes.items():
        function, parameter = split(nodeid)
        if function != MATRIX_TEST:
            continue
        fault, _, place = parameter.partition("@")
        faults += [fault] if fault not in faults else []
        places += [place] if place not in places else []
        cells[fault, place] = outcome
    mark = {"passed": "survived", "xfail": "**known bug**", "failed": "**FAILED**",
            "skipped": "skipped"}
    rows = ["| fault \\ where it strikes | " + " | ".join(places) + " |",
            "|---|" + "---|" * len(places)]
    for fault in faults:
        rows.append(f"| {fault} | " + " | ".join(
            mark[cells[fault, p]] if (fault, p) in cells else "—" for p in places) + " |")
    injected = len(cells)
    survived = sum(o == "passed" for o in cells.values())
    known = sum(o == "xfail" for o in cells.values())
    return "\n".join(rows), injected, survived, known


def hostile_table(collector: Collector) -> tuple[str, int, int, int]:
    tried: dict[str, int] = defaultdict(int)
    handled: dict[str, int] = defaultdict(int)
    known: dict[str, int] = defaultdict(int)
    for nodeid, outcome in collector.outcomes.items():
        function, _ = split(nodeid)
        if function not in GROUPS:
            continue
        tried[function] += 1
        handled[function] += outcome == "passed"
        known[function] += outcome == "xfail"
    rows = ["| bad input | tried | handled | known bugs | handled means |",
            "|---|---:|---:|---:|---|"]
    for function, (what, means) in GROUPS.items():
        if tried[function]:
            rows.append(f"| {what} | {tried[function]} | {handled[function]} | "
                        f"{known[function]} | {means} |")
    return ("\n".join(rows), sum(tried.values()), sum(handled.values()),
            sum(known.values()))


def run() -> tuple[str, bool]:
    """Run both modules; return the Markdown section and whether nothing failed."""
    collector = Collector()
    code = pytest.main(["-q", "-p", "no:cacheprovider", "--rootdir", str(ROOT),
                        str(ROOT / FAULTS), str(ROOT / HOSTILE)], plugins=[collector])
    matrix, injected, survived, known_faults = matrix_table(collector)
    hostile, tried, handled, known_inputs = hostile_table(collector)
    by_reason: dict[str, list[str]] = defaultdict(list)
    for nodeid, reason in collector.reasons.items():
        function, parameter = split(nodeid)
        by_reason[reason].append(f"`{function}`" + (f" [{parameter}]" if parameter else ""))
    bugs = "\n".join(f"- {reason}  \n  ({'; '.join(tests)})"
                     for reason, tests in by_reason.items())
    section = f"""## Faults and hostile inputs

Figures from `python bench/faults.py`, which runs `{FAULTS}` and
`{HOSTILE}`.

**Faults injected: {injected}; survived: {survived} ({100 * survived // max(injected, 1)}%)**;
known bugs: {known_faults}. A fault survived when, after it, the history is valid (every tool
call answered, an interrupted one says so), the archive holds exactly that history (a full
disk: everything up to the failure, and one warning), the next chat works, and
`Agent.resume` of the archive gives the same history and chats.

{matrix}

The faults: an exception is a `RuntimeError` (at the archive write: the disk filling up
under the open archive; at a subscriber: any error, logged and skipped); KeyboardInterrupt,
SystemExit and GeneratorExit are raised where they strike (at the archive write: as the
assistant's tool call is written); a hang outlasts `tool_timeout_s` or `summary_timeout_s`;
a provider error is a 503 that drops the connection once (retried); odd text is a lone
surrogate file name with NUL, bidi, zero-width, emoji, combining and ANSI characters; a
huge output is 1 MB. "—": the fault cannot strike there (nothing times out a model call, an
archive write or a subscriber; only models send provider errors; a subscriber gets no text
of its own).

KeyboardInterrupt, SystemExit and GeneratorExit leave `chat` (the magic turns
KeyboardInterrupt into one line); inside a tool, SystemExit (argparse, `sys.exit`) ends only
the tool. A real kernel interrupted, and one restarted, while a tool sleeps are tested in
`tests/reliability/test_kernel_interrupt.py`.

**Bad inputs tried: {tried}; handled (kept exactly, or a clear error): {handled}**; known
bugs: {known_inputs}. Nothing handled lost anything: each text comes back identical from the
history, the archive, `Agent.resume` and `recall`.

{hostile}

Known bugs, each a strict xfail naming its fix (the test run fails once it is fixed, so
the mark comes off):

{bugs or "- none"}
"""
    return section, code in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED) and \
        "failed" not in collector.outcomes.values()


def main() -> int:
    section, clean = run()
    print(section)
    write_section(RELIABILITY, "faults", section)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
