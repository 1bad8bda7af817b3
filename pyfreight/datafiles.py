"""Reading the YAML data files the driver works from (recipes, cpython/*.yaml,
dockerfiles/images.yaml). Each is checked against its JSON Schema in schema/ before
any code looks at it, and every problem is reported the same way: the file, then
one line per violation naming the field."""

from __future__ import annotations

import importlib.util
import json
import sys
import types
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from pyfreight.errors import PyfreightError
from pyfreight.paths import REPO_ROOT, SCHEMA_DIR

if TYPE_CHECKING:
    # Imported where a document is validated, not with this module: importing jsonschema
    # loads its format checkers (rfc3987_syntax compiles a grammar), most of a second that
    # every `pyfreight` start paid, `--help` included.
    import jsonschema
    from referencing import Registry


def shown(path: Path) -> str:
    """`path` as messages show it: relative to the repository when inside it."""
    try:
        return path.resolve().relative_to(REPO_ROOT).as_posix()
    except ValueError:
        return str(path)


@cache
def _registry() -> Registry:
    """Every schema in schema/, by its $id, so that one schema can $ref another
    (cpython/versions.yaml pins its sources the way recipes do)."""
    from referencing import Registry, Resource

    resources = []
    for path in sorted(SCHEMA_DIR.glob("*.schema.json")):
        resource = Resource.from_contents(json.loads(path.read_text()))
        resources.append((resource.id() or path.as_uri(), resource))
    return Registry().with_resources(resources)


_IRI_SYNTAX = "rfc3987_syntax"


def _defer_iri_syntax() -> None:
    """jsonschema, when imported, takes `is_valid_syntax` from rfc3987_syntax for its
    "iri" format checks, and that module compiles 38 grammars when imported: about a
    second of every command that reads a data file, though our schemas use no format.
    Until a format check asks for it, a stand-in function holds its place; the first
    call imports the real module (the SBOM's validation may ask)."""
    if _IRI_SYNTAX in sys.modules or importlib.util.find_spec(_IRI_SYNTAX) is None:
        return
    stand_in = types.ModuleType(_IRI_SYNTAX)

    def is_valid_syntax(rule: str, value: str) -> bool:
        if sys.modules.get(_IRI_SYNTAX) is stand_in:
            del sys.modules[_IRI_SYNTAX]
        real: bool = importlib.import_module(_IRI_SYNTAX).is_valid_syntax(rule, value)
        return real

    stand_in.is_valid_syntax = is_valid_syntax  # type: ignore[attr-defined]
    sys.modules[_IRI_SYNTAX] = stand_in


@cache
def validator(schema: str) -> jsonschema.Draft202012Validator:
    """The validator of schema/<schema> (e.g. "recipe.schema.json")."""
    _defer_iri_syntax()
    import jsonschema

    document = json.loads((SCHEMA_DIR / schema).read_text())
    return jsonschema.Draft202012Validator(document, registry=_registry())


def _field(err: jsonschema.ValidationError) -> str:
    return "/".join(str(p) for p in err.absolute_path) or "(top level)"


def _order(err: jsonschema.ValidationError) -> tuple:
    # Array indexes in numeric order, keys by name; never compares an int with a str.
    path = tuple((0, p, "") if isinstance(p, int) else (1, 0, str(p)) for p in err.absolute_path)
    return path, err.message


def validation_errors(data: object, schema: str) -> list[str]:
    """Every violation of schema/<schema> in `data`, each as '<field path>: <problem>',
    sorted by field path."""
    errors = sorted(validator(schema).iter_errors(data), key=_order)
    return [f"{_field(err)}: {err.message}" for err in errors]


def check(data: object, schema: str, path: Path) -> None:
    """Raises a PyfreightError listing every violation when `data` (read from `path`)
    does not match schema/<schema>."""
    problems = validation_errors(data, schema)
    if problems:
        listing = "\n  ".join(problems)
        raise PyfreightError(f"{shown(path)} does not match schema/{schema}:\n  {listing}")


def load_yaml(path: Path, schema: str, missing_hint: str | None = None) -> Any:
    """The parsed contents of the YAML file `path`, which must match schema/<schema>.
    A missing or unreadable file, invalid YAML or any schema violation raises a
    PyfreightError naming the file; `missing_hint` says what to do about a missing one."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        hint = f"; {missing_hint}" if missing_hint else ""
        raise PyfreightError(f"{shown(path)}: missing{hint}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise PyfreightError(f"{shown(path)}: cannot be read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise PyfreightError(f"{shown(path)}: not valid YAML: {exc}") from None
    check(data, schema, path)
    return data
