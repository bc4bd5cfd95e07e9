"""The docs a user reads match the code they run."""

from __future__ import annotations

import re
import subprocess
import sys
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
        else:
            assert field.default is None and documented.startswith("none"), name


def test_ci_runs_exactly_the_readmes_test_command() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = re.findall(r"```bash\n(.+?)\n```", readme)
    assert len(commands) == 2, "the README has exactly two set-up commands"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert commands[1] in ci.splitlines()


def test_the_readmes_main_job_runs() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    main_job = re.findall(r"```bash\n(.+?)\n```", readme)[0]
    demo = main_job.split("&&")[-1].split()
    assert demo[:3] == ["python", "-m", "nbagent.demo"]
    out = subprocess.run([sys.executable, *demo[1:]], capture_output=True, text=True, check=True)
    assert "auto compaction compacted" in out.stdout
