"""Loading and validating recipes/<name>/recipe.yaml."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import jsonschema
import yaml

from pyfreight.errors import PyfreightError
from pyfreight.paths import RECIPES_DIR, SCHEMA_DIR


@dataclass(frozen=True)
class DebianLocation:
    package: str
    file: str


@dataclass(frozen=True)
class Source:
    file: str
    sha256: str
    size: int
    urls: tuple[str, ...]
    debian: DebianLocation | None


@dataclass(frozen=True)
class Recipe:
    name: str
    version: str
    license: str
    license_files: tuple[str, ...]
    depends: tuple[str, ...]
    sources: tuple[Source, ...]
    directory: Path
    purl: str | None = None

    @property
    def build_script(self) -> Path:
        return self.directory / "build.sh"

    def files(self) -> list[Path]:
        """Every file of the recipe folder (recipe.yaml, build.sh, patches), sorted."""
        return sorted(p for p in self.directory.rglob("*") if p.is_file())


@cache
def _validator() -> jsonschema.Draft202012Validator:
    schema = json.loads((SCHEMA_DIR / "recipe.schema.json").read_text())
    return jsonschema.Draft202012Validator(schema)


def validation_errors(data: object) -> list[str]:
    """Every schema violation, each as '<field path>: <problem>'."""
    messages = []
    for err in sorted(_validator().iter_errors(data), key=lambda e: list(e.absolute_path)):
        field = "/".join(str(p) for p in err.absolute_path) or "(top level)"
        messages.append(f"{field}: {err.message}")
    return messages


def load_recipe(directory: Path) -> Recipe:
    path = directory / "recipe.yaml"
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        raise PyfreightError(f"{path}: missing; every recipe folder needs a recipe.yaml") from None
    except yaml.YAMLError as exc:
        raise PyfreightError(f"{path}: not valid YAML: {exc}") from None
    problems = validation_errors(data)
    if problems:
        listing = "\n  ".join(problems)
        raise PyfreightError(f"{path} does not match schema/recipe.schema.json:\n  {listing}")
    if data["name"] != directory.name:
        raise PyfreightError(
            f"{path}: name is {data['name']!r} but the folder is {directory.name!r}; make them equal"
        )
    if not (directory / "build.sh").is_file():
        raise PyfreightError(f"{directory}: missing build.sh")
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
    )


def load_all(recipes_dir: Path = RECIPES_DIR) -> dict[str, Recipe]:
    """All recipes by name, in name order."""
    return {
        d.name: load_recipe(d)
        for d in sorted(recipes_dir.iterdir())
        if d.is_dir() and not d.name.startswith(".")
    }
