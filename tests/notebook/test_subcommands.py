"""`%nbagent`'s subcommands (`widgets/_subcommands.py`): one table, from which the help
`%nbagent?` shows and the usage error are printed and through which every line is
dispatched; a misused form is answered with its own usage. (What each form does: the
tests of the forms, test_forms.py, test_magics.py, test_code_runs.py.)"""

from __future__ import annotations

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from nbagent.widgets import SETTINGS, SUBCOMMANDS, Subcommand, select

from nbagent.testing import ScriptedModel
from tests.notebook.helpers import plain, session


def typed(row: Subcommand) -> str:
    """A line that selects `row`: its name and a word for what follows."""
    if row.name == SETTINGS:
        return row.usage.split()[0].split("|")[0]
    return f"{row.name} x".strip() if row.usage else row.name


@pytest.mark.parametrize("row", SUBCOMMANDS, ids=[r.spelled or "(alone)" for r in SUBCOMMANDS])
def test_every_row_is_in_the_help_and_the_usage_error_and_selected_by_its_words(
        ip: InteractiveShell, row: Subcommand) -> None:
    help_text = ip.find_line_magic("nbagent").__doc__ or ""
    assert f"%nbagent {row.spelled}".strip() in help_text
    assert row.help.split()[0] in help_text
    if row.name not in ("", SETTINGS):  # every form a line may take is named when one does not
        with pytest.raises(UsageError) as refused:
            ip.run_line_magic("nbagent", "frobnicate")
        assert repr(row.spelled) in str(refused.value)
    chosen, _ = select(typed(row))
    assert chosen.name == row.name and chosen.handler is row.handler


def test_rows_sharing_a_name_are_one_form_with_two_shapes() -> None:
    by_name: dict[str, Subcommand] = {}
    for row in SUBCOMMANDS:
        first = by_name.setdefault(row.name, row)
        assert first.handler is row.handler, row.spelled  # whichever shape was typed


@pytest.mark.parametrize(("line", "said"), [
    ("reset now", "%nbagent reset takes nothing after it (got 'now')"),
    ("models --all", "%nbagent models: only --refresh may follow (got '--all'). Expected: "
                     "%nbagent models [--refresh]"),
    ("revoke mcp", "%nbagent revoke mcp: expected a server name and maybe one tool. "
                   "Expected: %nbagent revoke mcp NAME [TOOL]"),
    ("mcp add db", "%nbagent mcp add: expected a server name and how to reach it. Expected: "
                   "%nbagent mcp add NAME -- command args… · %nbagent mcp add NAME URL"),
], ids=["nothing-after", "models", "revoke-mcp", "mcp-add"])
def test_a_misused_form_is_answered_with_its_own_usage(
        ip: InteractiveShell, line: str, said: str) -> None:
    session(ScriptedModel())
    with pytest.raises(UsageError) as refused:
        ip.run_line_magic("nbagent", line)
    assert str(refused.value) == said


def test_nbagent_mcp_alone_lists_the_servers(ip: InteractiveShell) -> None:
    session(ScriptedModel())
    with capture_output() as alone:
        ip.run_line_magic("nbagent", "mcp")
    with capture_output() as listed:
        ip.run_line_magic("nbagent", "mcp list")
    assert plain(alone) == plain(listed) != []
