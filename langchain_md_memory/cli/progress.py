"""The progress bar of ``md-memory``: chunks embedded, rate and time left, on stderr.

On a terminal it is one line redrawn in place; with ``--progress`` into a pipe or
a log it prints a plain line every few seconds and one at the end. It follows
the ``embed`` phase only: reading and chunking files is fast, embedding is what
takes minutes. It draws the work of the thread that made it: a search that leaves
a backlog to be embedded in the background answers without a bar over its results.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TextIO

from ..types import ProgressEvent

__all__ = ["ProgressBar"]

_WIDTH = 24


class ProgressBar:
    """A :data:`~langchain_md_memory.types.ProgressCallback` drawing chunks embedded on ``stream``.

    Example:
        .. code-block:: python

            bar = ProgressBar(sys.stderr, live=sys.stderr.isatty())
            mem.sync(progress=bar)
            bar.close()
    """

    def __init__(self, stream: TextIO, *, live: bool, delay_s: float = 0.0, every_s: float | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``live`` redraws one line (a terminal); ``delay_s`` hides jobs that finish sooner;
        ``every_s`` spaces the redraws (default 0.1 s live, 2 s otherwise)."""
        self.stream = stream
        self.live = live
        self.delay_s = delay_s
        self.every_s = every_s if every_s is not None else (0.1 if live else 2.0)
        self.clock = clock
        self._start: float | None = None
        self._start_done = 0
        self._last_done = -1
        self._drawn_at: float | None = None
        self._open = False  # a live line is on screen without its newline
        self._thread = threading.get_ident()

    @classmethod
    def for_args(cls, stream: TextIO, *, explicit: bool | None, json: bool) -> ProgressBar | None:
        """The bar a command gets: ``--progress`` always, ``--no-progress`` never, else on a terminal
        without ``--json`` (and only for work that lasts over half a second)."""
        terminal = bool(getattr(stream, "isatty", lambda: False)())
        if explicit is False or (explicit is None and (json or not terminal)):
            return None
        return cls(stream, live=terminal, delay_s=0.0 if explicit else 0.5)

    def __call__(self, event: ProgressEvent) -> None:
        if event.phase != "embed" or threading.get_ident() != self._thread:
            return
        now = self.clock()
        if self._start is None or event.done < self._last_done:  # a new sync starts a new bar
            self.close()
            self._start, self._start_done, self._drawn_at = now, event.done, None
        self._last_done = event.done
        finished = event.done >= event.total
        if now - self._start < self.delay_s:
            return
        if not finished and self._drawn_at is not None and now - self._drawn_at < self.every_s:
            return
        self._drawn_at = now
        line = self.line(event, now - self._start)
        if self.live:
            self.stream.write(f"\r{line}\033[K")
            self._open = True
            if finished:
                self.close()
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def line(self, event: ProgressEvent, elapsed: float) -> str:
        """``embedding [#####.....] 120/400 chunks  35.2/s  0:08 left``."""
        filled = int(_WIDTH * event.fraction)
        bar = "#" * filled + "." * (_WIDTH - filled)
        text = f"embedding [{bar}] {event.done}/{event.total} {event.unit}"
        rate = (event.done - self._start_done) / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            text += f"  {rate:.1f}/s"
            if event.done < event.total:
                text += f"  {_clock((event.total - event.done) / rate)} left"
            else:
                text += f"  in {_clock(elapsed)}"
        return text

    def clear_line(self) -> None:
        """Take a live line off the screen so another message can be printed (it comes back)."""
        if self._open:
            self.stream.write("\r\033[K")
            self._open = False
            self._drawn_at = None

    def close(self) -> None:
        """End a live line with its newline. Idempotent."""
        if self._open:
            self.stream.write("\n")
            self.stream.flush()
            self._open = False


def _clock(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    return f"{hours}:{rest // 60:02d}:{rest % 60:02d}" if hours else f"{rest // 60}:{rest % 60:02d}"
