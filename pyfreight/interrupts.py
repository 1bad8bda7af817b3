"""Ctrl-C and SIGTERM: stop promptly, keep nothing half-made.

`install()` (called by the CLI) turns both signals into `Interrupted`, a BaseException
like KeyboardInterrupt, so every `finally` and `except BaseException` on the way out
runs: staging folders are removed and temporary files deleted. Before raising, the
handler runs the registered stoppers (the container runner kills every container it
started), so a build in a worker thread ends at once instead of finishing. Code that
is about to publish an artifact calls `check()` first."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType

_interrupted = threading.Event()
_signal_number = 0
_stoppers: list[Callable[[], None]] = []


class Interrupted(BaseException):
    """The run was interrupted by a signal; the exit code is 128 + its number."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


def on_interrupt(stopper: Callable[[], None]) -> None:
    """Registers a function the signal handler calls before raising (e.g. stop containers)."""
    _stoppers.append(stopper)


def interrupted() -> bool:
    return _interrupted.is_set()


def check() -> None:
    """Raises Interrupted if a signal came: call before publishing anything."""
    if _interrupted.is_set():
        raise Interrupted(_signal_number or signal.SIGINT)


def _handle(signum: int, frame: FrameType | None) -> None:
    global _signal_number
    first = not _interrupted.is_set()
    _signal_number = _signal_number or signum
    _interrupted.set()
    if first:
        for stop in list(_stoppers):
            stop()
    raise Interrupted(signum)


def install() -> None:
    signal.signal(signal.SIGINT, _handle)
    signal.signal(signal.SIGTERM, _handle)
