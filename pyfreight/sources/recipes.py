"""Loading and validating recipes/<name>/recipe.yaml."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from pyfreight.datafiles import load_yaml, shown
from pyfreight.errors import PyfreightError
from pyfreight.paths import recipes_dir as default_recipes_dir


@dataclass(frozen=True)
class DebianLocation:
    package: str
    file: str


@dataclass(frozen=True)
class PypiLocation:
    """A wheel on the package index pip is configured with (never named here)."""

    project: str
    version: str


@dataclass(frozen=True)
class Source:
    file: str
    sha256: str
    size: int
    urls: tuple[str, ...]
    debian: DebianLocation | None
    pypi: PypiLocation | None = None


@dataclass(frozen=True)
class Recipe:
    name: str
    version: str
    license: str
    license_files: tuple[str, ...]
    depends: tuple[str, ...]  # on every operating system
    sources: tuple[Source, ...]
    directory: Path
    purl: str | None = None
    # operating system (a target's uv_platform os) -> why the recipe is not built for it
    unavailable_on: MappingProxyType[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # operating system -> what its builds need beyond `depends`
    os_depends: MappingProxyType[str, tuple[str, ...]] = field(default_factory=lambda: MappingProxyType({}))
    # built only when named (a pgo build's training runtime), never as a target's dependency
    training_only: bool = False
    optimization: str | None = None  # upstream's own level where it differs from the toolchain's
    frame_pointers: bool = True  # false where the C-library bench measured their cost

    def depends_on(self, os_name: str) -> tuple[str, ...]:
        """What a build for `os_name` needs: `depends` and that system's own."""
        return self.depends + self.os_depends.get(os_name, ())

    def every_dependency(self) -> tuple[str, ...]:
        """What a build for any operating system may need."""
        return tuple(dict.fromkeys(self.depends + tuple(d for ds in self.os_depends.values() for d in ds)))

    @property
    def build_script(self) -> Path:
        return self.directory / "build.sh"

    def files(self) -> list[Path]:
        """Every file of the recipe folder (recipe.yaml, build.sh, patches), sorted."""
        return sorted(p for p in self.directory.rglob("*") if p.is_file())


def load_recipe(directory: Path) -> Recipe:
    path = directory / "recipe.yaml"
    data = load_yaml(path, "recipe.schema.json", "every recipe folder needs a recipe.yaml")
    if data["name"] != directory.name:
        raise PyfreightError(
            f"{shown(path)}: name is {data['name']!r} but the folder is {directory.name!r}; make them equal"
        )
    if not (directory / "build.sh").is_file():
        raise PyfreightError(f"{shown(directory)}: missing build.sh")
    sources = tuple(
        Source(
            file=s["file"],
            sha256=s["sha256"],
            size=s["size"],
            urls=tuple(s["urls"]),
            debian=DebianLocation(**s["debian"]) if "debian" in s else None,
        )
        for s in data["sources"]
    )
    return Recipe(
        name=data["name"],
        version=data["version"],
        license=data["license"],
        license_files=tuple(data["license_files"]),
        depends=tuple(data["depends"]),
        sources=sources,
        directory=directory,
        purl=data.get("purl"),
        unavailable_on=MappingProxyType(dict(data.get("unavailable_on", {}))),
        os_depends=MappingProxyType({k: tuple(v) for k, v in data.get("os_depends", {}).items()}),
        training_only=data.get("training_only", False),
        optimization=data.get("optimization"),
        frame_pointers=data.get("frame_pointers", True),
    )


def load_all(recipes_dir: Path | None = None) -> dict[str, Recipe]:
    """All recipes by name, in name order (of recipes/, or PYFREIGHT_RECIPES_DIR)."""
    folder = recipes_dir or default_recipes_dir()
    if not folder.is_dir():
        raise PyfreightError(f"{folder}: no such recipes folder (PYFREIGHT_RECIPES_DIR)")
    return {
        d.name: load_recipe(d) for d in sorted(folder.iterdir()) if d.is_dir() and not d.name.startswith(".")
    }
