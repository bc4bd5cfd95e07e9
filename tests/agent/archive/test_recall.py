"""`recall`, the search of a session's archived messages (`nbagent.agent.archive._recall`):
answered from an index built once and brought up to date from where it stopped (later calls
read only what was appended, never the whole archive again; a replaced file is indexed anew),
and a figures message searched and shown as its text, never its base64: a slice of the PNG
data finds nothing, and each image part shows as a short placeholder naming the figure and
its size (issue 33 follow-up). An index's file is closed when the index is dropped or, for
the ones the cache still keeps, when the process ends: never left unclosed to the teardown.
An index the cache drops is closed only once no other thread is reading it."""

from __future__ import annotations

import base64
import gc
import io
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nbagent.agent.archive import Archive, recall
from nbagent.agent.archive._recall import _KEEP as KEPT
from nbagent.agent.archive._recall import RecallIndex, index_of
from nbagent.agent.tools import Figure, images_message

SYSTEM = {"role": "system", "content": "You are careful."}


def test_recall_after_the_first_reads_only_what_was_appended(tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_session("scripted", "s1")
        archive.write_message(SYSTEM)
        for n in range(200):
            archive.write_message({"role": "user", "content": f"question {n} about sales"})
        assert recall(archive, "question 17 ").startswith("1 archived messages match")
        # damage a line already indexed (same length): a full re-read would now fail
        raw = bytearray(archive.path.read_bytes())
        at = raw.index(b"question 50 about")
        raw[at - 3: at - 1] = b"\x00\x00"
        archive.path.write_bytes(bytes(raw))
        archive.write_message({"role": "user", "content": "question 999 about sales"})
        answer = recall(archive, "question 999")
        assert answer.splitlines() == ["1 archived messages match; showing 1 from 0:",
                                       "#201 user: question 999 about sales"]
        with index_of(archive.path.resolve()) as index:
            assert index.covered == archive.path.stat().st_size


def test_recall_sees_a_new_file_when_the_archive_was_replaced(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    with Archive.at(path) as archive:
        archive.write_session("scripted", "a")
        archive.write_message({"role": "user", "content": "old words"})
        assert "#0 user: old words" in recall(path, "old")
    path.unlink()
    with Archive.at(path) as archive:
        archive.write_session("scripted", "a")
        archive.write_message({"role": "user", "content": "new words"})
        assert recall(path, "old").startswith("0 archived messages match")
        assert "#0 user: new words" in recall(path, "new")


def test_a_multi_line_query_matches_as_before(tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_message({"role": "user", "content": "line one\nline two"})
        archive.write_message({"role": "user", "content": "line one"})
        assert recall(archive, "ONE\nline").startswith("1 archived messages match")


# -- a figures message is text to recall, never base64 ----------------------------------------


def real_png(width_in: float, height_in: float) -> str:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    figure = MplFigure(figsize=(width_in, height_in), dpi=100)
    figure.add_subplot().plot([(i * 7919) % 101 for i in range(300)])
    buffer = io.BytesIO()
    FigureCanvasAgg(figure).print_png(buffer)
    return base64.b64encode(buffer.getvalue()).decode()


def test_a_figures_message_is_searched_and_shown_as_text(tmp_path: Path) -> None:
    png = real_png(6.4, 4.8)
    figures = images_message([Figure(png, "agent run 3, figure 1")])
    assert figures is not None
    with Archive("s1", tmp_path) as archive:
        archive.write_session("scripted", "s1")
        archive.write_message({"role": "user", "content": "plot the sales"})
        archive.write_message(figures)
        # slices of the data from its middle (the PNG signature is shared by every figure)
        for at in (200, len(png) // 2, len(png) - 40):
            assert recall(archive, png[at: at + 4]).startswith("0 archived messages"), at
        found = recall(archive, "agent run 3")
        assert found.splitlines()[0].startswith("1 archived messages match")
        assert "[image 1: agent run 3, figure 1, 640×480 PNG]" in found
        assert png[100:140] not in found and "base64" not in found
        whole = json.loads(recall(archive, message=1))
        assert whole["role"] == "user" and png[100:140] not in json.dumps(whole)
        assert "image 1: agent run 3, figure 1" in whole["content"]
        assert "[image 1: agent run 3, figure 1, 640×480 PNG]" in whole["content"]
        # the archive keeps the figure whole: only what recall shows is text
        assert png in archive.path.read_text()


# -- the index's file is closed, never left to the interpreter's teardown ----------------------


def test_an_index_kept_until_the_process_ends_is_closed_then(tmp_path: Path) -> None:
    code = ("import sys\nfrom pathlib import Path\n"
            "from nbagent.agent.archive import Archive, recall\n"
            "with Archive('s1', Path(sys.argv[1])) as archive:\n"
            "    archive.write_message({'role': 'user', 'content': 'kept words'})\n"
            "    assert recall(archive, 'kept').startswith('1 archived messages match')\n")
    ran = subprocess.run([sys.executable, "-W", "always::ResourceWarning", "-c", code,
                          str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    assert "ResourceWarning" not in ran.stderr and "unclosed" not in ran.stderr, ran.stderr


def test_an_index_dropped_unclosed_closes_its_file(tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_message({"role": "user", "content": "some words"})
        status = archive.path.stat()
        index = RecallIndex(archive.path, (status.st_dev, status.st_ino))
        index.update(status.st_size)
        assert index.find("words") == [0]
        text = index.text  # held here, so only the index's own release can close it
        del index
        gc.collect()
        assert text.closed


def test_many_archives_recalled_from_many_threads_each_get_their_own_answer(
        tmp_path: Path) -> None:
    # more archives than the cache keeps open: indexes are dropped while other threads read
    paths = []
    for n in range(KEPT + 6):
        with Archive(f"s{n}", tmp_path / str(n)) as archive:
            for m in range(30):
                archive.write_message({"role": "user", "content": f"archive {n} line {m}"})
            paths.append(archive.path)
    wrong: list[str] = []

    def ask(start: int) -> None:
        for turn in range(60):
            n = (start + turn * 5) % len(paths)
            answer = recall(paths[n], f"archive {n} line 7")
            if not answer.startswith("1 archived messages match"):
                wrong.append(answer)

    with ThreadPoolExecutor(6) as pool:
        list(pool.map(ask, range(6)))
    assert wrong == []


class FullDisk(io.BytesIO):
    """The index's file on a disk that just filled up: reads work, writes fail."""

    def write(self, data: object) -> int:
        raise OSError(28, "No space left on device")


def test_an_index_whose_disk_filled_up_goes_on_in_memory(tmp_path: Path) -> None:
    with Archive("s1", tmp_path) as archive:
        archive.write_message({"role": "user", "content": "first words"})
        with index_of(archive.path.resolve()) as index:
            index.text.seek(0)
            index.text = FullDisk(index.text.read())  # what was written so far, readable
        archive.write_message({"role": "user", "content": "second words"})
        assert "#1 user: second words" in recall(archive, "second")
        archive.write_message({"role": "user", "content": "third words"})
        assert recall(archive, "words").startswith("3 archived messages match")
        with index_of(archive.path.resolve()) as again:
            assert again is index and isinstance(index._map, bytearray)
