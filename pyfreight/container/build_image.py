"""A build image as builds name it: its content-hash tag, the exact image id (part of
every cache key) and the manifest of the packages in it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BuildImage:
    tag: str
    image_id: str
    manifest: Path
