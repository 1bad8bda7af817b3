"""The pinned CPython sources (cpython/versions.yaml) and the default version."""

from __future__ import annotations

from dataclasses import dataclass

from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.paths import REPO_ROOT
from pyfreight.sources.recipes import DebianLocation, Source

VERSIONS_FILE = REPO_ROOT / "cpython" / "versions.yaml"


@dataclass(frozen=True)
class CPythonSource:
    minor: str
    version: str
    top_dir: str
    source: Source
    features: frozenset[str]  # what the release can be built with (versions.yaml `features`)
    jit_llvm: str | None = None  # the LLVM its JIT stencils need (versions.yaml `jit_llvm`)


def load_versions() -> tuple[str, dict[str, CPythonSource]]:
    data = load_yaml(VERSIONS_FILE, "versions.schema.json")
    found = {}
    for minor, entry in data["versions"].items():
        s = entry["source"]
        debian = DebianLocation(**s["debian"]) if "debian" in s else None
        source = Source(s["file"], s["sha256"], s["size"], tuple(s["urls"]), debian)
        features = frozenset(entry["features"])
        found[str(minor)] = CPythonSource(
            str(minor), entry["version"], entry["top_dir"], source, features, entry.get("jit_llvm")
        )
    return str(data["default"]), found


def cpython_source(minor: str | None) -> CPythonSource:
    default, versions = load_versions()
    minor = minor or default
    if minor not in versions:
        raise PyfreightError(f"no pinned CPython {minor}; pinned: {', '.join(sorted(versions))}")
    return versions[minor]


def versions_with(feature: str) -> list[str]:
    """The pinned minor versions whose release has `feature` (versions.yaml)."""
    return [minor for minor, source in load_versions()[1].items() if feature in source.features]
