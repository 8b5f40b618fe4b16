"""The CLI's progress bar: chunks embedded with rate and time left, redrawn in place or as log lines."""

from __future__ import annotations

import io

from langchain_md_memory.cli.progress import ProgressBar
from langchain_md_memory.types import ProgressEvent


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def embed(done: int, total: int) -> ProgressEvent:
    return ProgressEvent("embed", done, total, "chunks")


def test_a_terminal_gets_one_line_redrawn_with_rate_and_time_left() -> None:
    stream, clock = Terminal(), Clock()
    bar = ProgressBar(stream, live=True, clock=clock)
    bar(embed(0, 400))
    clock.now += 4
    bar(embed(100, 400))
    clock.now += 4
    bar(embed(400, 400))
    frames = stream.getvalue().split("\r")[1:]
    assert "100/400 chunks  25.0/s  0:12 left" in frames[1]
    assert frames[2].startswith("embedding [########################] 400/400 chunks  50.0/s  in 0:08")
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1


def test_into_a_log_it_writes_a_line_every_few_seconds_and_the_last_one() -> None:
    stream, clock = io.StringIO(), Clock()
    bar = ProgressBar(stream, live=False, clock=clock)
    for done in range(0, 101, 10):
        bar(embed(done, 100))
        clock.now += 0.5
    lines = stream.getvalue().splitlines()
    assert [line.split()[2] for line in lines] == ["0/100", "40/100", "80/100", "100/100"]
    assert "\r" not in stream.getvalue()


def test_other_phases_and_short_jobs_draw_nothing() -> None:
    stream, clock = Terminal(), Clock()
    bar = ProgressBar(stream, live=True, delay_s=0.5, clock=clock)
    bar(ProgressEvent("index", 5, 10, "files"))
    bar(embed(0, 10))
    clock.now += 0.2
    bar(embed(10, 10))
    assert stream.getvalue() == ""


def test_who_gets_a_bar() -> None:
    assert isinstance(ProgressBar.for_args(Terminal(), explicit=None, json=False), ProgressBar)
    assert ProgressBar.for_args(Terminal(), explicit=None, json=True) is None  # --json: quiet
    assert ProgressBar.for_args(io.StringIO(), explicit=None, json=False) is None  # not a terminal
    assert ProgressBar.for_args(Terminal(), explicit=False, json=False) is None  # --no-progress
    logged = ProgressBar.for_args(io.StringIO(), explicit=True, json=True)  # --progress wins
    assert logged is not None and not logged.live


def test_a_warning_takes_the_line_off_the_screen_and_close_ends_it() -> None:
    stream, clock = Terminal(), Clock()
    bar = ProgressBar(stream, live=True, clock=clock)
    bar(embed(0, 10))
    bar.clear_line()
    assert stream.getvalue().endswith("\r\033[K")
    clock.now += 1
    bar(embed(5, 10))
    bar.close()
    bar.close()
    assert stream.getvalue().endswith("left\033[K\n")
