"""The one writer of nbagent's files (`_private_files`): text written whole is redacted
unless its row says why not, private (0600) and never written through a link; a handle to
write through is handed out only for a row that says why its content is not redacted
there; a file set aside never replaces one set aside before. The archive's own discipline
(folders, links, FIFOs, one writer) is tests/reliability/test_archive.py's."""

from __future__ import annotations

import dataclasses
import json
import os
import stat
from pathlib import Path

import pytest

from nbagent.agent.archive import (
    ARCHIVE_SET_ASIDE,
    NOTEBOOK_POINTER,
    SERVER_LOCK,
    WRITTEN,
    open_for_append,
    open_for_lock,
    replace_whole,
    set_aside,
    temporary_file,
)

KEY = "sk-proj-" + "Ab3dE5gH7jK9mN1pQ3rS5tU7vW9xY1zA3bC5dE7fG9hJ"


def test_text_written_whole_is_redacted_private_and_still_json(tmp_path: Path) -> None:
    target = tmp_path / "pointer.json"
    record = {"notebook": "sales.ipynb", "note": f"key {KEY}", "earlier": ["a", "b"]}
    replace_whole(target, json.dumps(record), kind=NOTEBOOK_POINTER)
    written = json.loads(target.read_text(encoding="utf-8"))
    assert KEY not in target.read_text(encoding="utf-8")
    assert written == {**record, "note": "key [redacted]"}
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["pointer.json"]  # no temporary left


def test_ordinary_text_written_whole_is_kept_byte_for_byte(tmp_path: Path) -> None:
    text = json.dumps({"notebook": "risk-adjusted/new-york-city-taxi.ipynb",
                       "session": "20260101-120000-ab12cd", "identity": [2049, 1234]})
    replace_whole(tmp_path / "p.json", text, kind=NOTEBOOK_POINTER)
    assert (tmp_path / "p.json").read_text(encoding="utf-8") == text


def test_a_row_that_says_why_keeps_its_text_as_given(tmp_path: Path) -> None:
    said = dataclasses.replace(NOTEBOOK_POINTER, unredacted="a test's own row")
    replace_whole(tmp_path / "p.json", KEY, kind=said)
    assert (tmp_path / "p.json").read_text(encoding="utf-8") == KEY


def test_a_link_in_place_of_a_file_written_whole_is_replaced_never_followed(
        tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.txt"
    elsewhere.write_text("theirs", encoding="utf-8")
    target = tmp_path / "p.json"
    target.symlink_to(elsewhere)
    replace_whole(target, "{}", kind=NOTEBOOK_POINTER)
    assert not target.is_symlink() and target.read_text(encoding="utf-8") == "{}"
    assert elsewhere.read_text(encoding="utf-8") == "theirs"


@pytest.mark.parametrize("row", [r for r in WRITTEN if r.unredacted is None],
                         ids=lambda r: r.name)
def test_no_handle_is_handed_out_for_a_file_redacted_here(row: object, tmp_path: Path) -> None:
    for hand_out in (lambda: open_for_append(tmp_path / "f", kind=row),  # type: ignore[arg-type]
                     lambda: open_for_lock(tmp_path / "f", kind=row),  # type: ignore[arg-type]
                     lambda: temporary_file(kind=row)):  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="unredacted"):
            hand_out()
    assert not (tmp_path / "f").exists()


def test_a_lock_file_is_private_and_never_opened_through_a_link(tmp_path: Path) -> None:
    descriptor = open_for_lock(tmp_path / "k.lock", kind=SERVER_LOCK)
    os.close(descriptor)
    assert stat.S_IMODE((tmp_path / "k.lock").stat().st_mode) == 0o600
    (tmp_path / "l.lock").symlink_to(tmp_path / "k.lock")
    with pytest.raises(Exception, match="symbolic link; nbagent never follows a link to its "
                                        "server start lock"):
        open_for_lock(tmp_path / "l.lock", kind=SERVER_LOCK)


def test_a_file_set_aside_never_replaces_one_set_aside_before(tmp_path: Path) -> None:
    path, aside = tmp_path / "s.jsonl", tmp_path / "s.jsonl.replaced-20260101-120000"
    names = []
    for content in ("first", "second", "third"):
        path.write_text(content, encoding="utf-8")
        names.append(set_aside(path, aside, kind=ARCHIVE_SET_ASIDE).name)
    assert names == [aside.name, f"{aside.name}-2", f"{aside.name}-3"]
    assert [(tmp_path / n).read_text(encoding="utf-8") for n in names] == [
        "first", "second", "third"]
    assert not path.exists()
