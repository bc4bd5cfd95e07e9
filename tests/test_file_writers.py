"""One writer for the user's files: no module of the package writes a file but the helper
(`agent/archive/_private_files`), every call of the helper names its row of `WRITTEN`, and
every row is written by some module — so docs/security.md's list (printed from the rows
with their writers, `tests/test_docs.py` fails when stale) is the list of files nbagent
writes. tests/file_writers.py says what counts as writing a file."""

from __future__ import annotations

import pytest

from nbagent.agent.archive import WRITTEN
from tests.file_writers import helper_calls, stray_writers, writers_in, writers_of

# Writers that write no file, each with why (a stale entry fails below).
NOT_A_FILE = {
    ("nbagent.agent.mcp._stderr", "os.fdopen"):
        "the write end of an os.pipe() a stdio server's stderr goes into",
}


def test_no_module_but_the_helper_writes_a_file() -> None:
    found = {(module, call.split(": ")[1]): call for module, calls in stray_writers().items()
             for call in calls}
    stray = sorted(f"{module} {call}" for (module, name), call in found.items()
                   if (module, name) not in NOT_A_FILE)
    assert stray == [], ("write files through nbagent/agent/archive/_private_files.py (a row "
                         f"of WRITTEN and its function), never by hand: {stray}")


def test_every_writer_left_alone_is_still_there() -> None:
    found = {(module, call.split(": ")[1]) for module, calls in stray_writers().items()
             for call in calls}
    assert sorted(set(NOT_A_FILE) - found) == []


STRAY = {
    "open for writing": "open(path, 'w')",
    "open to append, mode by name": "open(path, mode='a')",
    "open, mode in a variable": "open(path, mode)",
    "a path's open": "Path(p).open('w')",
    "a path's write_text": "folder.write_text('x')",
    "a path's write_bytes": "self.path.write_bytes(b'x')",
    "mkdir": "Path(p).mkdir(parents=True)",
    "touch": "p.touch()",
    "chmod a path": "p.chmod(0o777)",
    "rename a path": "p.rename(q)",
    "os.open creating": "import os\nos.open(p, os.O_WRONLY | os.O_CREAT, 0o600)",
    "os.open, flags in a variable": "import os\nos.open(p, FLAGS)",
    "os.open, a flag by getattr": "import os\nos.open(p, os.O_RDONLY | getattr(os, 'O_CREAT'))",
    "os.fdopen for writing": "import os\nos.fdopen(fd, 'w')",
    "os.makedirs": "import os\nos.makedirs(p)",
    "os.replace": "import os\nos.replace(a, b)",
    "os.replace imported by name": "from os import replace as move\nmove(a, b)",
    "os.symlink": "import os\nos.symlink(a, b)",
    "os.chmod": "import os\nos.chmod(p, 0o777)",
    "tempfile": "import tempfile\ntempfile.TemporaryFile()",
    "tempfile by name": "from tempfile import NamedTemporaryFile\nNamedTemporaryFile()",
    "shutil copy, module renamed": "import shutil as sh\nsh.copyfile(a, b)",
    "shutil.move": "import shutil\nshutil.move(a, b)",
    "json.dump": "import json\njson.dump(record, handle)",
    "sqlite": "import sqlite3\nsqlite3.connect(p)",
    "io.open": "import io\nio.open(p, 'x')",
    "gzip for writing": "import gzip\ngzip.open(p, 'wt')",
    "a log file": "import logging\nlogging.FileHandler(p)",
    "a frame to csv": "frame.to_csv(p)",
}
HARMLESS = {
    "open to read": "open(path)",
    "open to read bytes": "open(path, 'rb', buffering=0)",
    "os.open to read": "import os\nos.open(p, os.O_RDONLY | _NO_LINK, dir_fd=d)",
    "a history replaced": "history.replace(messages)",
    "a string replaced": "text.replace('a', 'b')",
    "a stream written": "import sys\nsys.stdout.write('x')",
    "json to text": "import json\njson.dumps(record)",
    "a connection opened": "await connection.open(timeout)",
    "a link opened": "import webbrowser\nwebbrowser.open('https://example.com/auth')",
    "a file removed": "import os\nos.unlink(p)",
}


@pytest.mark.parametrize("source", STRAY.values(), ids=STRAY.keys())
def test_each_way_of_writing_a_file_is_found(source: str) -> None:
    assert writers_in(source) != []


@pytest.mark.parametrize("source", HARMLESS.values(), ids=HARMLESS.keys())
def test_what_writes_no_file_is_not_taken_for_a_writer(source: str) -> None:
    assert writers_in(source) == []


def test_every_call_of_the_helper_names_a_row_and_every_row_is_written() -> None:
    calls = helper_calls()
    unnamed = sorted(f"{c.module} line {c.line}: {c.function}" for c in calls if c.row is None)
    assert unnamed == [], f"each call names its row of WRITTEN as kind=ROW: {unnamed}"
    unwritten = sorted(row.name for row in WRITTEN if not writers_of(row))
    assert unwritten == [], f"rows of WRITTEN no module writes (remove them): {unwritten}"
