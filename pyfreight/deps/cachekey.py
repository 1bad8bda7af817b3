"""Cache keys: a hash of everything that goes into an artifact, and nothing else."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path

# Bump when the runner changes what it does with the same inputs.
RUNNER_VERSION = "2"  # 2: static libraries must be deterministic archives


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def artifact_key(
    recipe_files: Mapping[str, str],
    source_sha256s: list[str],
    image_id: str,
    target: str,
    settings: Mapping[str, str],
    dependency_keys: Mapping[str, str],
) -> str:
    """recipe_files: relative path -> sha256 of each file of the recipe folder (and of the
    runner's entry script); settings: the compiler environment (toolchain.keyed_settings)."""
    material = {
        "runner": RUNNER_VERSION,
        "recipe_files": dict(sorted(recipe_files.items())),
        "sources": list(source_sha256s),
        "image": image_id,
        "target": target,
        "settings": dict(sorted(settings.items())),
        "dependencies": dict(sorted(dependency_keys.items())),
    }
    blob = json.dumps(material, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
