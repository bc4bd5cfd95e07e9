"""The `read_file` tool's body (`nbagent.agent.tools._files`): a file is read by pages bounded
in characters, bytes and lines, streamed from its offset and never read whole; what is not
text (a folder, a binary, a FIFO, a device, a socket) gets a clear line; the file opened is
the one the confinement approved (no link swapped in is followed, no hard link read); the
model's refusals are results it can read. Which paths may be read: test_confinement. The
`work` fixture (a working directory with a folder beside it) is in conftest.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nbagent import Agent
from nbagent.agent.tools import read_text_page
from nbagent.testing import ScriptedModel, calls, reply


def test_a_file_under_the_working_directory_is_read_by_pages(work: Path) -> None:
    (work / "notes.txt").write_text("".join(f"line {n}\n" for n in range(5)))
    assert read_text_page("notes.txt", 0, 2) == "[lines 0–2 of 5; next offset 2]\nline 0\nline 1"
    assert read_text_page(str(work / "notes.txt"), 3, 10) == "[lines 3–5 of 5; end of file]\nline 3\nline 4"
    assert read_text_page("notes.txt", -4, 0) == "[lines 0–1 of 5; next offset 1]\nline 0"


def test_a_long_file_is_paged_without_reading_it_into_one_string(work: Path) -> None:
    with (work / "big.csv").open("w") as handle:
        handle.writelines(f"{n},{n * 2}\n" for n in range(100_000))
    assert read_text_page("big.csv", 99_998, 500) == \
        "[lines 99998–100000 of 100000; end of file]\n99998,199996\n99999,199998"


def test_undecodable_bytes_are_shown_readably(work: Path) -> None:
    (work / "latin1.csv").write_bytes(b"name,city\nJos\xe9,M\xfcnchen\n")
    assert read_text_page("latin1.csv", 0, 5) == "[lines 0–2 of 2; end of file]\nname,city\nJos\\xe9,M\\xfcnchen"
    odd_name = os.fsdecode(b"caf\xe9.csv")
    (work / odd_name).write_text("ok\n")
    assert read_text_page(odd_name, 0, 5).endswith("\nok")


def test_folders_binaries_fifos_and_missing_files_get_a_clear_line(work: Path) -> None:
    (work / "folder").mkdir()
    (work / "data.parquet").write_bytes(b"PAR1\x00\x01\x02" * 100)
    os.mkfifo(work / "pipe")
    assert read_text_page("folder", 0, 5) == "folder is a folder, not a file."
    assert read_text_page("data.parquet", 0, 5).startswith("data.parquet is a binary file (700 bytes)")
    assert read_text_page("pipe", 0, 5) == "Refused: pipe is not a regular file."
    assert read_text_page("missing.csv", 0, 5) == "No file missing.csv."


def test_the_model_reading_a_secret_or_an_outside_file_gets_refusals(work: Path) -> None:
    (work / ".env").write_text("OPENAI_API_KEY=sk-do-not-read-0123456789abcdef\n")
    model = ScriptedModel([calls(("read_file", {"path": ".env"}),
                                 ("read_file", {"path": "../outside/private.txt"})),
                           reply("I may not read those.")])
    agent = Agent(model=model, namespace={})
    agent.chat("show me the .env and the private file")
    results = [m["content"] for m in agent.history if m["role"] == "tool"]
    assert results[0].startswith("Refused: .env is a secret file")
    assert results[1].startswith("Refused: ../outside/private.txt is outside")
    sent = str(model.requests)  # nothing secret went to the provider
    assert "do-not-read" not in sent and "not yours" not in sent


# -- pages bounded in characters, bytes and lines; files streamed, never read whole ----------


def read_bytes_of_this_process() -> int:
    """What this process has read through system calls so far (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_a_one_line_file_of_megabytes_comes_back_as_one_bounded_page(work: Path) -> None:
    record = '{"id": 1, "name": "caf\u00e9", "tags": ["a", "b"]}, '
    (work / "big.json").write_text("[" + record * 80_000 + "]")  # ~3.6 MB, one line
    page = read_text_page("big.json", 0, 200)
    header, _, body = page.partition("\n")
    assert len(page) <= 16_000 + 300 and len(page.encode()) <= 32_000 + 300
    assert header == ("[lines 0–0 of 1; line 0 goes on: read_file(path='big.json', offset=0, "
                      f"start={len(body.encode())})]")
    assert body.startswith('[{"id": 1, "name": "café"')
    start = len(body.encode())
    second = read_text_page("big.json", 0, 200, start=start)
    head2, _, body2 = second.partition("\n")
    assert head2.startswith(f"[line 0 from byte {start:,} to line 0 of 1; line 0 goes on: ")
    joined = (body + body2).encode()
    assert (work / "big.json").read_bytes().startswith(joined)  # the pieces join exactly


def test_wide_characters_are_bounded_in_bytes_and_short_lines_in_lines(work: Path) -> None:
    (work / "emoji.txt").write_text("\U0001f600" * 30_000 + "\n")
    page = read_text_page("emoji.txt", 0, 5)
    assert len(page.encode()) <= 32_000 + 300 and "goes on" in page.splitlines()[0]
    (work / "short.txt").write_text("x\n" * 10_000)
    short = read_text_page("short.txt", 0, 10_000)
    assert short.splitlines()[0] == "[lines 0–500 of 10000; next offset 500]"
    assert len(short.splitlines()) == 501


def test_a_page_reads_only_what_it_shows_not_the_whole_file(work: Path) -> None:
    import tracemalloc

    size = 48 << 20  # a 48 MiB file of one line: no line count, no whole read
    with (work / "huge.log").open("wb") as handle:
        chunk = b"0123456789abcdef" * 65_536
        for _ in range(size // len(chunk)):
            handle.write(chunk)
    before = read_bytes_of_this_process()
    tracemalloc.start()
    page = read_text_page("huge.log", 0, 100)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    read = read_bytes_of_this_process() - before
    assert page.startswith(f"[lines 0–0 of a file of {size:,} bytes; line 0 goes on: ")
    assert read < size // 20 and peak < size // 20  # the old reader held the whole line


def test_a_text_header_with_a_sparse_or_nul_tail_is_binary(work: Path) -> None:
    with (work / "sparse.csv").open("wb") as handle:
        handle.write(b"a,b\n" * 5_000)
        handle.truncate(64 << 20)  # a hole after the text header
    with (work / "tail.csv").open("wb") as handle:
        handle.write(b"a,b\n" * 20_000 + b"\x00\x01\x02" * 10)
    for name in ("sparse.csv", "tail.csv"):
        assert read_text_page(name, 0, 5).startswith(f"{name} is a binary file")


def test_devices_and_sockets_are_refused_without_being_read(work: Path) -> None:
    import socket

    everything = [Path("/")]
    for device in ("/dev/zero", "/dev/urandom", "/dev/null"):
        result = read_text_page(device, 0, 5, roots=everything)
        assert result.startswith(f"Refused: {device} ") and "\x00" not in result
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(work / "kernel.sock"))
    try:
        assert read_text_page("kernel.sock", 0, 5) == "Refused: kernel.sock is not a regular file."
    finally:
        listener.close()


# -- the approved file is the one opened: no link followed, no second name ---------------------


def test_a_symlink_swapped_in_after_the_check_is_not_followed(work: Path) -> None:
    from nbagent.agent.tools import check_readable, open_confined
    from nbagent.engine import Unreadable

    (work / "data").mkdir()
    (work / "data" / "rows.csv").write_text("a,b\n")
    secret = work.parent / "outside" / "private.txt"
    checked, reason = check_readable("data/rows.csv")
    assert checked is not None and reason == ""
    (work / "data" / "rows.csv").unlink()
    (work / "data" / "rows.csv").symlink_to(secret)  # the file becomes a link
    with pytest.raises(Unreadable, match="changed while it was being opened"):
        open_confined(checked, "data/rows.csv")
    (work / "data" / "rows.csv").unlink()
    (work / "data").rename(work / "data-real")
    (work / "data").symlink_to(secret.parent)  # a folder of its path becomes a link
    (secret.parent / "rows.csv").write_text("not yours\n")
    with pytest.raises(Unreadable, match="changed while it was being opened"):
        open_confined(checked, "data/rows.csv")


def test_a_hard_link_to_a_file_elsewhere_is_refused(work: Path) -> None:
    os.link(work.parent / "outside" / "private.txt", work / "innocent.txt")
    result = read_text_page("innocent.txt", 0, 5)
    assert result.startswith("Refused: innocent.txt has 2 names (hard links)")
    assert "not yours" not in result


def test_offsets_past_the_end_and_windows_line_ends(work: Path) -> None:
    (work / "crlf.csv").write_bytes(b"a,b\r\n1,2\r\n")
    assert read_text_page("crlf.csv", 0, 5) == "[lines 0–2 of 2; end of file]\na,b\n1,2"
    assert read_text_page("crlf.csv", 10**12, 5) == f"[lines {10**12}–{10**12} of 2; end of file]\n"
    (work / "one.txt").write_text("x" * 100 + "\nsecond\n")
    far = read_text_page("one.txt", 0, 5, start=10**15)  # clamped to the line's end
    assert far == "[line 0 from byte 100 to line 2 of 2; end of file]\n\nsecond"
