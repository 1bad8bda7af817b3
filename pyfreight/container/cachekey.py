"""Cache keys: a hash of everything that goes into an artifact, and nothing else."""

from __future__ import annotations

from collections.abc import Mapping

from pyfreight.hashing import json_sha256

# Bump when the runner changes what it does with the same inputs.
RUNNER_VERSION = "2"  # 2: static libraries must be deterministic archives


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
    return json_sha256(material)
