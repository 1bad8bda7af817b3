"""Temporary files and folders carry the id of the process that made them, so that what
a killed run (SIGKILL, a power cut) left behind can be told from what a running one is
still writing, and swept at the next start."""

from __future__ import annotations

import os
import re
from pathlib import Path

from pyfreight.formats.untrusted import remove_tree

_OWNER = re.compile(r"\.pid(\d+)\.")


def owned(prefix: str) -> str:
    """A name prefix for a temporary file or folder of this process."""
    return f"{prefix}.pid{os.getpid()}."


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep(folder: Path) -> list[str]:
    """Removes the entries of `folder` made by processes that no longer run; returns
    their names."""
    removed: list[str] = []
    try:
        entries = list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for path in entries:
        match = _OWNER.search(path.name)
        if match is None or alive(int(match.group(1))):
            continue
        # However deep and whatever it holds (an archive unpacked by a killed run), it is
        # removed without raising: a leftover must never stop a later command.
        remove_tree(path)
        removed.append(path.name)
    return removed
