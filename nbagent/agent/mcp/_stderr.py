"""A stdio server's stderr, kept bounded: the child writes into a pipe, a daemon thread
drains it as it comes and keeps only the last few KB, so a server that writes without end
costs a few KB of memory and a failure can still quote its last lines. The drain runs
behind the child: once the child has exited, `settled` waits (bounded) until the drain has
read the pipe to its end, so the last lines are there to quote.
"""

from __future__ import annotations

import asyncio
import os
import threading
from typing import TextIO

KEEP_BYTES = 8_192  # the tail kept of a server's stderr
_READ = 65_536
# How long a failure waits for the drain to read what an exited child wrote last: reading
# what is left takes milliseconds; only a survivor of the child holding the pipe open (a
# grandchild in a session of its own) runs it out.
SETTLE_S = 2.0


class StderrTail:
    """A pipe for one child's stderr and the last `keep` bytes written to it.

    `writer` is handed to the child; `release()` closes nbagent's copy of it once the
    child has it (so the drain ends when the child does); `tail()` reads the last lines.
    """

    def __init__(self, keep: int = KEEP_BYTES) -> None:
        read_fd, write_fd = os.pipe()
        self.keep = keep
        self.writer: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._ring = bytearray()
        self._total = 0
        self._lock = threading.Lock()
        self._ended = threading.Event()  # the drain read the pipe to its end
        self._drain = threading.Thread(target=self._read, args=(read_fd,), daemon=True,
                                       name="nbagent-mcp-stderr")
        self._drain.start()

    def _read(self, fd: int) -> None:
        try:
            while chunk := os.read(fd, _READ):
                with self._lock:
                    self._total += len(chunk)
                    self._ring += chunk
                    if len(self._ring) > self.keep:
                        del self._ring[:len(self._ring) - self.keep]
        except OSError:
            pass
        finally:
            os.close(fd)
            self._ended.set()

    @property
    def total(self) -> int:
        """Bytes the child wrote to stderr so far (only the last `keep` are kept)."""
        with self._lock:
            return self._total

    def held(self) -> int:
        """Bytes held in memory now (at most `keep`)."""
        with self._lock:
            return len(self._ring)

    def tail(self, lines: int = 3, chars: int = 300) -> str:
        """The last non-blank lines written, at most `chars` characters."""
        with self._lock:
            text = bytes(self._ring).decode("utf-8", errors="replace")
        kept = [line.strip() for line in text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])[-chars:]

    @property
    def ended(self) -> bool:
        """Whether the drain has read everything: every writer (the child, its own
        children, nbagent's copy) closed the pipe."""
        return self._ended.is_set()

    async def settled(self, timeout: float = SETTLE_S) -> bool:
        """Release nbagent's copy and wait, at most `timeout` seconds, until the drain
        has read the pipe to its end; call it once the child has exited. Whether it did."""
        self.release()
        return await asyncio.to_thread(self._ended.wait, timeout)

    def release(self) -> None:
        """Close nbagent's copy of the writing end (the child keeps its own)."""
        if not self.writer.closed:
            try:
                self.writer.close()
            except OSError:
                pass
