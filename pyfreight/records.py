"""Records of finished work, written beside what they describe: a small JSON file
holding the cache key (a hash of every input) and facts about the outputs. A record is
written last and atomically, so its presence with the right key means the work is
complete; anything without one is not trusted."""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

from pyfreight import interrupts
from pyfreight.hashing import file_sha256, json_sha256
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import PACKAGE_DIR, SCHEMA_DIR


def read_record(path: Path) -> dict[str, Any] | None:
    """The record at `path`, or None when it is missing or unreadable."""
    try:
        data = json.loads(path.read_text())
    except (FileNotFoundError, json.JSONDecodeError, UnicodeDecodeError):
        return None
    return data if isinstance(data, dict) else None


def write_record(path: Path, data: dict[str, Any]) -> None:
    interrupts.check()  # a record vouches for finished work: none after a signal
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{owned(f'.{path.name}')}part")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


@contextmanager
def exclusive(record: Path, what: str) -> Iterator[None]:
    """Held by one run while it checks, makes and records the work `record` vouches for.
    Two runs on one build folder (two terminals, a test beside a build) would otherwise
    write the same tree at once and one could record what the other half-replaced; the
    second waits instead, then finds the work done. The lock is the kernel's (flock), so
    a killed holder releases it; the file beside the record only names the holder."""
    lock = record.with_name(f".{record.name}.lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with open(lock, "a+") as handle:
        waited = False
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited:
                    handle.seek(0)
                    holder = handle.read().strip() or "?"
                    say(f"{what}: waiting for another run (pid {holder}) using {record.parent}")
                    waited = True
                interrupts.check()  # Ctrl-C while waiting stops at once
                time.sleep(0.2)
        try:
            handle.seek(0)
            handle.truncate()
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def record_matches(path: Path, key: str) -> dict[str, Any] | None:
    """The record at `path` if it was written for exactly `key`."""
    record = read_record(path)
    return record if record is not None and record.get("key") == key else None


@cache
def driver_code_digest() -> str:
    """A hash of the driver's own code and schemas: part of the key of anything the
    driver itself lays out (archives, check results), so a changed driver redoes them."""
    files = sorted(
        p
        for root in (PACKAGE_DIR, SCHEMA_DIR)
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    )
    return json_sha256({p.relative_to(PACKAGE_DIR.parent).as_posix(): file_sha256(p) for p in files})
