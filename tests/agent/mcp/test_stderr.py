"""A stdio server's stderr kept bounded (`_stderr`): everything written is drained and
counted, only the last `keep` bytes are held, and the tail quotes the last non-blank
lines, cut to a length; `settled` waits, bounded, for the drain to read to the end."""

from __future__ import annotations

import asyncio
import os
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


def test_settling_waits_for_the_end_of_the_pipe_but_not_forever() -> None:
    """`settled` reads to the end once every writer closed; a survivor that holds the pipe
    open (here a copy of the writing end) costs the timeout, no more."""
    tail = StderrTail()
    survivor = os.dup(tail.writer.fileno())
    tail.writer.write("last words\n")
    assert asyncio.run(tail.settled(timeout=0.2)) is False  # our copy released, not its
    assert not tail.ended
    os.write(survivor, b"after the timeout\n")
    os.close(survivor)
    assert asyncio.run(tail.settled(timeout=5.0)) is True
    assert tail.ended and tail.tail() == "last words\nafter the timeout"
