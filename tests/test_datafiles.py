"""The YAML data files the driver reads: each real one matches its schema, and a
broken copy is refused with a message naming the file and the field."""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import jsonschema
import pytest
import yaml

from pyfreight import datafiles
from pyfreight.bench import suite
from pyfreight.container import images
from pyfreight.cpython import setup_local, versions
from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.paths import REPO_ROOT, SCHEMA_DIR, recipes_dir
from pyfreight.runners import cpython_tests

# data file (relative to the repository) -> its schema in schema/
DATA_FILES = {
    "cpython/versions.yaml": "versions.schema.json",
    "cpython/extensions.yaml": "extensions.schema.json",
    "cpython/bench.yaml": "bench.schema.json",
    "cpython/test-suite.yaml": "test-suite.schema.json",
    "dockerfiles/images.yaml": "images.schema.json",
    "recipes/zlib/recipe.yaml": "recipe.schema.json",
    "targets/x86_64-unknown-linux-gnu.yaml": "target.schema.json",
    "windows/projects.yaml": "windows-projects.schema.json",
}
SCHEMAS = sorted(p.name for p in SCHEMA_DIR.glob("*.schema.json"))


def _real(name: str) -> dict:
    return yaml.safe_load((REPO_ROOT / name).read_text())


def _violations(message: str) -> list[str]:
    """The '<field>: <problem>' lines of a schema error."""
    return [line.strip() for line in message.splitlines()[1:]]


@pytest.mark.parametrize("name", sorted(DATA_FILES))
def test_real_file_matches_its_schema(name):
    data = load_yaml(REPO_ROOT / name, DATA_FILES[name])
    assert data == _real(name)


def test_every_recipe_matches_the_schema():
    folders = [d for d in sorted(recipes_dir().iterdir()) if d.is_dir() and not d.name.startswith(".")]
    assert folders
    for folder in folders:
        load_yaml(folder / "recipe.yaml", "recipe.schema.json")


def test_every_data_file_has_a_schema():
    """Every schema in schema/ except PYTHON.json's (an output, not read by the loaders)
    describes one of the data files."""
    assert set(SCHEMAS) - {"PYTHON.json.schema.json"} == set(DATA_FILES.values())


def test_the_loaders_read_the_real_files():
    default, pinned = versions.load_versions()
    assert default in pinned
    assert "_ssl" in setup_local.load_extension_data().linked
    assert "runtime" in images.load_spec()
    assert suite.load_suite()["benchmarks"]
    assert cpython_tests.load_test_suite()["subset"]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_schema_is_a_valid_draft_2020_12_schema(schema):
    document = json.loads((SCHEMA_DIR / schema).read_text())
    jsonschema.Draft202012Validator.check_schema(document)
    assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert document["$id"].endswith(f"/{schema}")


def _undescribed(node: object, defs: dict, where: str) -> list[str]:
    """Fields (entries of `properties`) with no description, directly or on what they $ref."""
    found = []
    if isinstance(node, dict):
        for name, sub in node.get("properties", {}).items():
            target = sub
            if "description" not in sub and sub.get("$ref", "").startswith("#/$defs/"):
                target = defs[sub["$ref"].removeprefix("#/$defs/")]
            if "description" not in target:
                found.append(f"{where}/{name}")
        for key, value in node.items():
            found += _undescribed(value, defs, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _undescribed(value, defs, f"{where}/{i}")
    return found


@pytest.mark.parametrize("schema", [s for s in SCHEMAS if s != "PYTHON.json.schema.json"])
def test_every_field_is_described(schema):
    document = json.loads((SCHEMA_DIR / schema).read_text())
    assert _undescribed(document, document.get("$defs", {}), "") == []


def _set(path: tuple, value: object) -> Callable[[dict], None]:
    def change(data: dict) -> None:
        for key in path[:-1]:
            data = data[key]
        data[path[-1]] = value

    return change


def _drop(path: tuple) -> Callable[[dict], None]:
    def change(data: dict) -> None:
        for key in path[:-1]:
            data = data[key]
        del data[path[-1]]

    return change


# (data file, how to break a copy of it, the field named, words of the problem)
BROKEN = [
    # versions.yaml
    (
        "cpython/versions.yaml",
        _set(("versions", "3.14", "source", "sha256"), "AB" * 32),
        "versions/3.14/source/sha256",
        "does not match",
    ),
    (
        "cpython/versions.yaml",
        _set(("versions", "3.14", "source", "size"), "24 MB"),
        "versions/3.14/source/size",
        "is not of type 'integer'",
    ),
    (
        "cpython/versions.yaml",
        _drop(("versions", "3.13", "top_dir")),
        "versions/3.13",
        "'top_dir' is a required property",
    ),
    (
        "cpython/versions.yaml",
        _set(("versions", "3.14", "patches"), []),
        "versions/3.14",
        "'patches' was unexpected",
    ),
    ("cpython/versions.yaml", _set(("default",), 3.1), "default", "is not of type 'string'"),
    (
        "cpython/versions.yaml",
        _set(("versions", "3.14", "version"), "3.14"),
        "versions/3.14/version",
        "does not match",
    ),
    # extensions.yaml
    (
        "cpython/extensions.yaml",
        _set(("linked", "_ssl", "links"), "ssl crypto"),
        "linked/_ssl/links",
        "is not of type 'array'",
    ),
    (
        "cpython/extensions.yaml",
        _drop(("linked", "_bz2", "recipes")),
        "linked/_bz2",
        "'recipes' is a required property",
    ),
    (
        "cpython/extensions.yaml",
        _set(("linked", "_tkinter", "cflags"), ["-DWITH_APPINIT=1"]),
        "linked/_tkinter/cflags/0",
        "does not match",
    ),
    ("cpython/extensions.yaml", _set(("excluded", "_gdbm"), ""), "excluded/_gdbm", "should be non-empty"),
    ("cpython/extensions.yaml", _set(("shared",), ["array"]), "(top level)", "'shared' was unexpected"),
    # images.yaml
    (
        "targets/x86_64-unknown-linux-gnu.yaml",
        _drop(("toolchain", "sysroot", "packages")),
        "toolchain/sysroot",
        "'packages' is a required property",
    ),
    ("dockerfiles/images.yaml", _set(("base", "suit"), "bookworm"), "base", "'suit' was unexpected"),
    ("dockerfiles/images.yaml", _set(("runtime", "variant"), "minimal"), "runtime/variant", "is not one of"),
    (
        "targets/x86_64-unknown-linux-gnu.yaml",
        _set(("toolchain", "sysroot", "packages", "libc6-dev"), 2.31),
        "toolchain/sysroot/packages/libc6-dev",
        "is not of type 'string'",
    ),
    (
        "targets/x86_64-unknown-linux-gnu.yaml",
        _set(("toolchain", "sysroot", "keep"), ["/usr/include"]),
        "toolchain/sysroot/keep/0",
        "does not match",
    ),
    (
        "dockerfiles/images.yaml",
        _set(("build", "dockerfile"), "../build.Dockerfile"),
        "build/dockerfile",
        "does not match",
    ),
    # bench.yaml
    (
        "cpython/bench.yaml",
        _set(("wheels", "pyperf==2.10.0"), "79196bc4"),
        "wheels/pyperf==2.10.0",
        "does not match",
    ),
    ("cpython/bench.yaml", _set(("benchmarks", "nbody"), ["nbody"]), "benchmarks/nbody/0", "does not match"),
    ("cpython/bench.yaml", _set(("benchmarks", "go"), []), "benchmarks/go", "should be non-empty"),
    ("cpython/bench.yaml", _drop(("startup",)), "(top level)", "'startup' is a required property"),
    # test-suite.yaml
    ("cpython/test-suite.yaml", _set(("subset",), "test_os test_re"), "subset", "is not of type 'array'"),
    (
        "cpython/test-suite.yaml",
        _set(("ignore", "test.test_sys.TestRemoteExec.*"), None),
        "ignore/test.test_sys.TestRemoteExec.*",
        "is not of type 'string'",
    ),
    ("cpython/test-suite.yaml", _set(("skip",), {}), "(top level)", "'skip' was unexpected"),
    # a recipe
    (
        "recipes/zlib/recipe.yaml",
        _set(("sources", 0, "sha256"), "0" * 63),
        "sources/0/sha256",
        "does not match",
    ),
]


@pytest.mark.parametrize(
    ("name", "change", "field", "problem"),
    BROKEN,
    ids=[f"{name.split('/')[-1]}-{field}-{problem.split()[-1]}" for name, _, field, problem in BROKEN],
)
def test_broken_copy_is_refused(tmp_path, name, change, field, problem):
    data = copy.deepcopy(_real(name))
    change(data)
    path = tmp_path / Path(name).name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    schema = DATA_FILES[name]
    with pytest.raises(PyfreightError) as err:
        load_yaml(path, schema)
    message = str(err.value)
    assert message.splitlines()[0] == f"{path} does not match schema/{schema}:"
    assert any(line.startswith(f"{field}: ") and problem in line for line in _violations(message)), message


def _copy_with(tmp_path: Path, name: str, change: Callable[[dict], None]) -> Path:
    data = _real(name)
    change(data)
    path = tmp_path / Path(name).name
    path.write_text(yaml.safe_dump(data))
    return path


# The loaders themselves go through the schema (not only load_yaml).
def test_load_versions_checks_the_schema(tmp_path, monkeypatch):
    path = _copy_with(tmp_path, "cpython/versions.yaml", _drop(("versions", "3.14", "source")))
    monkeypatch.setattr(versions, "VERSIONS_FILE", path)
    with pytest.raises(PyfreightError, match=r"versions/3\.14: 'source' is a required property"):
        versions.load_versions()


def test_load_extension_data_checks_the_schema(tmp_path):
    path = _copy_with(tmp_path, "cpython/extensions.yaml", _set(("plain",), "array"))
    with pytest.raises(PyfreightError, match="plain: 'array' is not of type 'array'"):
        setup_local.load_extension_data(path)


def test_load_spec_checks_the_schema(tmp_path, monkeypatch):
    path = _copy_with(tmp_path, "dockerfiles/images.yaml", _drop(("build",)))
    monkeypatch.setattr(images, "SPEC_FILE", path)
    with pytest.raises(PyfreightError, match=r"\(top level\): 'build' is a required property"):
        images.load_spec()


def test_load_suite_checks_the_schema(tmp_path, monkeypatch):
    path = _copy_with(tmp_path, "cpython/bench.yaml", _set(("benchmarks", "float"), "bm_float"))
    monkeypatch.setattr(suite, "SUITE_FILE", path)
    with pytest.raises(PyfreightError, match="benchmarks/float: 'bm_float' is not of type 'array'"):
        suite.load_suite()


def test_load_test_suite_checks_the_schema(tmp_path):
    path = _copy_with(tmp_path, "cpython/test-suite.yaml", _set(("subset",), ["os"]))
    with pytest.raises(PyfreightError, match="subset/0: 'os' does not match"):
        cpython_tests.load_test_suite(path)


def test_every_violation_is_listed_in_field_order(tmp_path):
    path = tmp_path / "test-suite.yaml"
    path.write_text(
        "subset: [test_os, 12, test_re, x, y, z, a, b, c, d, e]\nignore: {test.x: ''}\nextra: 1\n"
    )
    with pytest.raises(PyfreightError) as err:
        load_yaml(path, "test-suite.schema.json")
    fields = [line.split(": ", 1)[0] for line in _violations(str(err.value))]
    assert fields == [
        "(top level)",
        "ignore/test.x",
        "subset/1",
        "subset/3",
        "subset/4",
        "subset/5",
        "subset/6",
        "subset/7",
        "subset/8",
        "subset/9",
        "subset/10",
    ]


def test_missing_file(tmp_path):
    path = tmp_path / "versions.yaml"
    with pytest.raises(PyfreightError) as err:
        load_yaml(path, "versions.schema.json")
    assert str(err.value) == f"{path}: missing"
    with pytest.raises(PyfreightError) as err:
        load_yaml(path, "versions.schema.json", "restore it")
    assert str(err.value) == f"{path}: missing; restore it"


def test_a_file_in_the_repository_is_named_relative_to_it():
    with pytest.raises(PyfreightError) as err:
        load_yaml(REPO_ROOT / "cpython" / "no-such-file.yaml", "versions.schema.json")
    assert str(err.value).startswith("cpython/no-such-file.yaml: missing")
    assert datafiles.shown(Path("/elsewhere/x.yaml")) == "/elsewhere/x.yaml"


def test_invalid_yaml(tmp_path):
    path = tmp_path / "bench.yaml"
    path.write_text("wheels: {pyperf==2.10.0: [unclosed\n")
    with pytest.raises(PyfreightError) as err:
        load_yaml(path, "bench.schema.json")
    assert str(err.value).startswith(f"{path}: not valid YAML: ")


def test_an_empty_file_is_refused(tmp_path):
    path = tmp_path / "images.yaml"
    path.write_text("# nothing yet\n")
    with pytest.raises(PyfreightError, match=r"\(top level\): None is not of type 'object'"):
        load_yaml(path, "images.schema.json")


def _option_pattern(schema: str, *path: str) -> str:
    node = json.loads((SCHEMA_DIR / schema).read_text())
    for key in path:
        node = node[key]
    return str(node["pattern"])


def test_the_schemas_option_patterns_accept_what_options_py_builds():
    """PYTHON.json's build_options and a target's builds.release name builds the way
    cpython/options.py parses them: every base and modifier it knows, and nothing else."""
    from pyfreight.cpython.naming import MAKE_SUFFIX
    from pyfreight.cpython.options import BASE_OPTIONS, MODIFIERS, BuildOptions

    described = _option_pattern("PYTHON.json.schema.json", "properties", "build_options")
    released = _option_pattern("target.schema.json", "properties", "builds", "properties", "release", "items")
    valid = [
        f"{prefix}{base}{'+' + modifier if modifier else ''}"
        for prefix in ("", "freethreaded+")
        for base in BASE_OPTIONS
        for modifier in ("", *MODIFIERS)
    ]
    for text in valid:
        try:
            options = BuildOptions.parse(text)
        except PyfreightError:
            continue  # e.g. a modifier that is the default, or fulllto without lto
        assert re.fullmatch(described, str(options)), str(options)
        if options.base in MAKE_SUFFIX:
            assert re.fullmatch(released, str(options)), str(options)
    for wrong in ("fast", "noopt+nosuch", "lto+", "pgo+lto+pgo+lto"):
        assert not re.fullmatch(described, wrong), wrong
    # a release names only builds a make target makes
    assert not re.fullmatch(released, "pgo") and not re.fullmatch(released, "freethreaded+pgo")


def test_reading_a_data_file_leaves_the_iri_grammars_uncompiled_until_a_check_needs_them():
    """rfc3987_syntax compiles its grammars when imported (most of a second of every
    command); validating our data files needs none, and jsonschema's "iri" checks
    still work, loading it on first use."""
    probe = (
        "import sys\n"
        "from pyfreight.targets import all_targets\n"
        "all_targets()\n"
        "import jsonschema\n"
        "print('lark' in sys.modules)\n"
        "checker = jsonschema.FormatChecker()\n"
        "print(checker.conforms('http://a/b c', 'iri'), checker.conforms('http://a/b', 'iri'))\n"
        "print('lark' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False", "True", "True"]


def test_a_target_may_refuse_each_option_feature_and_each_modifier_options_py_knows():
    """target.schema.json's unavailable_options names exactly what spec.check_target_has
    looks up: the four option features and every modifier of cpython/options.py."""
    from pyfreight.cpython.options import MODIFIERS

    schema = json.loads((SCHEMA_DIR / "target.schema.json").read_text())
    names = schema["properties"]["builds"]["properties"]["unavailable_options"]["propertyNames"]["enum"]
    assert sorted(names) == sorted(["pgo", "lto", "debug", "freethreaded", *MODIFIERS])
