"""The MCP loop (`_loop_thread`): one event loop in one daemon thread, started on first
use; a caller in any thread gets its coroutine's result or exception, a call past its
timeout is cancelled and raises `TimeoutError`, a call cannot wait for itself on the
loop's own thread, and a stopped loop starts afresh on the next call."""

from __future__ import annotations

import asyncio
import threading

import pytest

from nbagent.agent.mcp._loop_thread import LoopThread


def test_calls_run_on_the_loops_own_thread_from_any_thread() -> None:
    loop = LoopThread(name="test-mcp-loop")

    async def where() -> str:
        return threading.current_thread().name

    try:
        assert loop.run(where()) == "test-mcp-loop"
        answers: list[str] = []
        worker = threading.Thread(target=lambda: answers.append(loop.run(where())))
        worker.start()
        worker.join(10)
        assert answers == ["test-mcp-loop"]

        async def fails() -> None:
            raise ValueError("from the loop")

        with pytest.raises(ValueError, match="from the loop"):
            loop.run(fails())
    finally:
        loop.stop()


def test_a_call_past_its_timeout_is_cancelled() -> None:
    loop = LoopThread()
    cancelled = threading.Event()

    async def hangs() -> None:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    try:
        with pytest.raises(TimeoutError, match="no answer within 0.2 s"):
            loop.run(hangs(), timeout=0.2)
        assert cancelled.wait(5)
    finally:
        loop.stop()


def test_a_call_on_the_loops_thread_cannot_wait_for_itself() -> None:
    loop = LoopThread()

    async def nested() -> str:
        inner = asyncio.sleep(0, result="never")
        try:
            loop.run(inner)
        except RuntimeError as error:
            return str(error)
        return "waited"

    try:
        assert loop.run(nested()) == "an MCP call cannot wait for itself on the MCP loop's thread"
    finally:
        loop.stop()


def test_a_stopped_loop_starts_again_on_the_next_call() -> None:
    loop = LoopThread()

    async def running_loop() -> asyncio.AbstractEventLoop:
        return asyncio.get_running_loop()

    first = loop.run(running_loop())
    loop.stop()
    assert first.is_closed()
    second = loop.run(running_loop())
    loop.stop()
    assert second is not first
