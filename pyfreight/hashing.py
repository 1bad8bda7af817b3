"""The one sha256 helper: files are read in chunks, so size does not matter."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import IO

CHUNK = 1 << 20


def stream_sha256(stream: IO[bytes] | None, header: bytes = b"") -> str:
    """The sha256 of `header` followed by everything `stream` still holds."""
    digest = hashlib.sha256(header)
    while stream is not None and (chunk := stream.read(CHUNK)):
        digest.update(chunk)
    return digest.hexdigest()


def file_sha256(path: Path) -> str:
    with path.open("rb") as fh:
        return stream_sha256(fh)


def bytes_sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_sha256(text: str) -> str:
    return bytes_sha256(text.encode())


def json_sha256(material: object) -> str:
    """The sha256 of `material` as canonical JSON (sorted keys, no spaces)."""
    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
