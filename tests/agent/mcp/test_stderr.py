"""A stdio server's stderr kept bounded (`_stderr`): everything written is drained and
counted, only the last `keep` bytes are held, and the tail quotes the last non-blank
lines, cut to a length."""

from __future__ import annotations

import time

from nbagent.agent.mcp._stderr import StderrTail


def drained(tail: StderrTail, total: int) -> bool:
    for _ in range(200):  # the drain thread reads what the pipe holds
        if tail.total >= total:
            return True
        time.sleep(0.02)
    return False


def test_a_flood_is_counted_but_only_its_last_bytes_are_held() -> None:
    tail = StderrTail(keep=1_000)
    line = "x" * 99 + "\n"
    for _ in range(1_000):
        tail.writer.write(line)
    tail.writer.write("\n\nthe last line\n\n")
    tail.release()
    assert drained(tail, 100_000 + 17)
    assert tail.total == 100_000 + 17 and tail.held() == 1_000
    assert tail.tail(lines=2) == "x" * 99 + "\nthe last line"
    assert tail.tail(lines=3, chars=20) == "x" * 6 + "\nthe last line"
    tail.release()  # twice: nothing to close any more
