"""Log files and the console lines about them."""

from __future__ import annotations

import sys
from collections import deque
from pathlib import Path


def tail(path: Path, lines: int = 50) -> str:
    try:
        with path.open(errors="replace") as fh:
            return "".join(deque(fh, maxlen=lines)).rstrip("\n")
    except FileNotFoundError:
        return f"(no log at {path})"


def say(message: str) -> None:
    """Console progress line, flushed at once so a long step shows it started."""
    print(message, file=sys.stderr, flush=True)
