"""The branching bench stays runnable and honest (its small session; the figures are the
bench's job, so only what must hold whatever the machine is asserted here)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "bench"))
import branching  # noqa: E402


@pytest.fixture(scope="module")
def runs() -> list[branching.Run]:
    return branching.run(branching.SMALL)


def test_branching_keeps_the_reads_out_of_the_main_window(runs: list[branching.Run]) -> None:
    without, with_ = runs
    assert not without.branching and with_.branching
    assert with_.main_tokens_peak * 4 < without.main_tokens_peak
    assert with_.main_tokens_end * 4 < without.main_tokens_end
    assert without.main_compactions >= 1 and with_.main_compactions == 0
    assert without.branch_tokens == 0 < with_.branch_tokens < with_.billed_tokens
    assert with_.cost_cheap_delegate < with_.cost  # the branches billed at their own prices


def test_what_the_user_said_and_found_stays_in_view(runs: list[branching.Run]) -> None:
    for run in runs:
        assert run.first_request_in_view
    with_ = runs[1]
    assert with_.decisions_in_view == len(branching.DECISIONS)
    assert with_.findings_in_view == len(branching.DECISIONS)


def test_the_findings_are_true_of_the_files(tmp_path: Path) -> None:
    data = branching.make_data(tmp_path, branching.SMALL)
    log = (tmp_path / "logs" / "app.log").read_text()
    errors = sum(" ERROR " in line for line in log.splitlines())
    assert data.findings[0].startswith(f"logs/app.log has {errors} ERROR lines")
    rows = (tmp_path / "sales.csv").read_text().splitlines()[1:]
    mean = sum(float(r.split(",")[2]) for r in rows) / len(rows)
    assert f"mean revenue {mean:.2f}" in data.findings[1]
    assert len(list((tmp_path / "reports").iterdir())) == branching.SMALL.reports


def test_json_output_is_one_object(capsys: pytest.CaptureFixture[str]) -> None:
    branching.main(["--json", "--small"])
    payload = json.loads(capsys.readouterr().out)
    assert list(payload) == ["size", "runs"] and len(payload["runs"]) == 2
