"""Records of finished work, written beside what they describe: a small JSON file
holding the cache key (a hash of every input) and facts about the outputs. A record is
written last and atomically, so its presence with the right key means the work is
complete; anything without one is not trusted."""

from __future__ import annotations

import json
import os
from functools import cache
from pathlib import Path
from typing import Any

from pyfreight import interrupts
from pyfreight.hashing import file_sha256, json_sha256
from pyfreight.leftovers import owned
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
