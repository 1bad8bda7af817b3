"""Where things live: the repository's top, the package's own folders, and a build's
workspace (build/ and dist/). A module that reads a data file of the repository names
that file beside its reader, from REPO_ROOT here (targets/, cpython/*.yaml, windows/)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent
REPO_ROOT = PACKAGE_DIR.parent
IN_CONTAINER_DIR = PACKAGE_DIR / "in_container"  # scripts run by an interpreter inside a container
SCHEMA_DIR = REPO_ROOT / "schema"
DOCKERFILES_DIR = REPO_ROOT / "dockerfiles"


@dataclass(frozen=True)
class Workspace:
    """The output folders of one build tree (build/ and dist/)."""

    build: Path
    dist: Path = REPO_ROOT / "dist"

    @property
    def downloads(self) -> Path:
        return self.build / "downloads"

    @property
    def logs(self) -> Path:
        return self.build / "logs"

    @property
    def images(self) -> Path:
        return self.build / "images"

    @property
    def artifacts(self) -> Path:
        return self.build

    @property
    def scratch(self) -> Path:
        return self.build / "tmp"


def default_workspace() -> Workspace:
    """build/ and dist/ beside the repository, or PYFREIGHT_BUILD_DIR and
    PYFREIGHT_DIST_DIR when set."""
    build = os.environ.get("PYFREIGHT_BUILD_DIR")
    dist = os.environ.get("PYFREIGHT_DIST_DIR")
    return Workspace(
        Path(build).resolve() if build else REPO_ROOT / "build",
        Path(dist).resolve() if dist else REPO_ROOT / "dist",
    )


def recipes_dir() -> Path:
    """recipes/ of the repository, or PYFREIGHT_RECIPES_DIR when set (a folder of
    recipes of your own, e.g. to try one before adding it)."""
    chosen = os.environ.get("PYFREIGHT_RECIPES_DIR")
    return Path(chosen).resolve() if chosen else REPO_ROOT / "recipes"
