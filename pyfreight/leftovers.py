"""Temporary files and folders carry the id of the process that made them, so that what
a killed run (SIGKILL, a power cut) left behind can be told from what a running one is
still writing, and swept at the next start."""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


def remove_tree(path: Path) -> None:
    """Removes `path` and everything below it, however deep (shutil.rmtree recurses
    and breaks on a tree a thousand folders deep, after removing only part of it),
    without following symlinks; what cannot be removed is left, never raised."""
    if not path.is_dir() or path.is_symlink():
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
        return
    stack = [path]
    tried: set[str] = set()  # folders whose removal was tried: never entered twice
    while stack:
        folder = stack[-1]
        try:
            children = list(os.scandir(folder))
        except OSError:
            children = []
        deeper = []
        for child in children:
            if child.is_dir(follow_symlinks=False):
                if child.path not in tried:
                    deeper.append(child.path)
                continue
            with contextlib.suppress(OSError):
                os.unlink(child.path)
        if deeper:
            for sub in deeper:
                with contextlib.suppress(OSError):
                    os.chmod(sub, 0o700)  # a folder we may not enter would stay
            stack.extend(Path(sub) for sub in deeper)
            continue
        stack.pop()
        tried.add(str(folder))
        with contextlib.suppress(OSError):
            os.rmdir(folder)


@contextlib.contextmanager
def scratch_folder(prefix: str, parent: Path | None = None) -> Iterator[Path]:
    """A new temporary folder (in `parent`, or the system's), removed however the block
    ends and however deep what was unpacked into it (tempfile's cleanup recurses)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    try:
        yield folder
    finally:
        remove_tree(folder)
