"""pyfreight.python_json, the typed PYTHON.json reader packers use: hostile documents and
folders are refused with one line, link inputs come out ordered and once, and the
packer example of docs/embedding.md links a working interpreter from a real archive."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pyfreight import python_json
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import extract
from pyfreight.python_json import Distribution

ROOT = Path(__file__).resolve().parent.parent


def _variant(init_fn, objs=(), links=(), in_core=False, required=False, licenses=None):
    entry = {"in_core": in_core, "init_fn": init_fn, "objs": list(objs), "links": list(links)}
    entry |= {"required": required, "variant": "default"}
    return [entry | ({"licenses": licenses} if licenses else {})]


SSL = {"name": "ssl", "path_static": "build/lib/libssl.a"}
CRYPTO = {"name": "crypto", "path_static": "build/lib/libcrypto.a"}
BUILD_INFO = {
    "core": {
        "objs": ["build/Python/ceval.o", "build/Modules/config.o", "build/Modules/_io.o"],
        "links": [{"name": "m", "system": True}],
    },
    "inittab_object": "build/Modules/config.o",
    "extensions": {
        "sys": _variant("NULL", in_core=True),
        "_io": _variant("PyInit__io", objs=["build/Modules/_io.o"], required=True),
        "_hashlib": _variant(
            "PyInit__hashlib", ["build/Modules/_hashopenssl.o"], [CRYPTO], licenses=["Apache-2.0"]
        ),
        "_ssl": _variant(
            "PyInit__ssl",
            ["build/Modules/_ssl.o"],
            [SSL, CRYPTO, {"name": "m", "system": True}],
            licenses=["Apache-2.0"],
        ),
    },
}


def _dist(root: Path) -> Distribution:
    return Distribution(root=root.resolve(), document={"build_info": BUILD_INFO})


def test_link_inputs_list_core_then_extensions_each_once_without_the_archives_inittab(tmp_path):
    dist = _dist(tmp_path)
    chosen = dist.extensions_named(["_ssl", "_hashlib"])
    assert [e.name for e in chosen] == ["_hashlib", "_io", "_ssl", "sys"]
    inputs = dist.link_inputs(chosen)
    root = tmp_path.resolve()
    assert [p.relative_to(root).as_posix() for p in inputs.objects] == [
        "build/Python/ceval.o",
        "build/Modules/_io.o",
        "build/Modules/_hashopenssl.o",
        "build/Modules/_ssl.o",
    ]
    assert [p.name for p in inputs.static_libraries] == ["libcrypto.a", "libssl.a"]
    assert inputs.system_libraries == ("m",)
    assert inputs.inittab == (
        ("_hashlib", "PyInit__hashlib"),
        ("_io", "PyInit__io"),
        ("_ssl", "PyInit__ssl"),
        ("sys", None),
    )
    assert inputs.licenses == ("Apache-2.0",)


def test_required_extensions_are_the_core_and_start_up_modules(tmp_path):
    assert [e.name for e in _dist(tmp_path).required_extensions()] == ["_io", "sys"]
    assert [e.name for e in _dist(tmp_path).extensions_named([], with_required=True)] == ["_io", "sys"]


def test_an_unknown_extension_is_refused_with_the_known_ones(tmp_path):
    with pytest.raises(PyfreightError, match=r"no extension module named _nosuch.*_hashlib, _io, _ssl, sys"):
        _dist(tmp_path).extensions_named(["_nosuch"])


def test_a_path_that_leaves_the_archive_through_a_symlink_is_refused(tmp_path):
    root = tmp_path / "python"
    (root / "build").mkdir(parents=True)
    (root / "build" / "lib").symlink_to("/usr/lib")
    with pytest.raises(PyfreightError, match=r"PYTHON.json names build/lib/libssl.a, which leads outside"):
        _dist(root).link_inputs(_dist(root).extensions_named(["_ssl"]))


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, r"no python/PYTHON.json; give a full archive"),
        (b"{not json", r"python/PYTHON.json is not valid JSON"),
        (b"[1, 2]", r"python/PYTHON.json is not a JSON object"),
        (b'{"version": "8"}', r"does not match schema/PYTHON.json.schema.json: .*`pyfreight validate` lists"),
    ],
    ids=["missing", "not-json", "not-object", "off-schema"],
)
def test_a_bad_document_is_refused_in_one_line(tmp_path, content, message):
    root = tmp_path / "python"
    root.mkdir()
    if content is not None:
        (root / "PYTHON.json").write_bytes(content)
    with pytest.raises(PyfreightError, match=message) as raised:
        python_json.load(tmp_path)
    assert "\n" not in str(raised.value)


def test_a_missing_archive_is_named(tmp_path):
    with pytest.raises(PyfreightError, match=r"nosuch-full.tar.zst: no such archive"):
        python_json.open_archive(tmp_path / "nosuch-full.tar.zst", tmp_path / "scratch")


def _documented_packer() -> str:
    text = (ROOT / "docs" / "embedding.md").read_text()
    section = text.split("## Reading PYTHON.json from a program", 1)[1]
    match = re.search(r"^```python\n(.*?)^```", section, re.M | re.S)
    assert match, "docs/embedding.md lost its packer example"
    return match.group(1)


@pytest.mark.container
@pytest.mark.archive_reader
def test_a_real_archive_reads_as_its_name_says(noopt_dist, tmp_path):
    dist = python_json.open_archive(noopt_dist.full, tmp_path)
    assert f"cpython-{dist.python_version}+" in noopt_dist.full.name
    assert f"-{dist.target_triple}-{dist.build_options}-full" in noopt_dist.full.name
    inputs = dist.link_inputs(dist.extensions[name][0] for name in dist.extensions)
    missing = [p for p in (*inputs.objects, *inputs.static_libraries) if not p.is_file()]
    assert inputs.objects and not missing
    assert dist.include_dir.joinpath("Python.h").is_file()


def _run_packer(source: str, noopt_dist, tmp_path: Path, probe: str) -> subprocess.CompletedProcess:
    packer = tmp_path / "packer.py"
    packer.write_text(source)
    output = tmp_path / "mypython"
    subprocess.run(
        [sys.executable, str(packer), str(noopt_dist.full), str(output)],
        check=True,
        cwd=tmp_path,
        capture_output=True,
    )
    extract(noopt_dist.install_only, tmp_path / "tree")
    env = {"PATH": os.environ["PATH"], "PYTHONHOME": str(tmp_path / "tree" / "python")}
    return subprocess.run([str(output), "-c", probe], capture_output=True, text=True, env=env)


@pytest.mark.container
@pytest.mark.archive_reader
def test_the_documented_packer_links_an_interpreter_with_what_it_chose(noopt_dist, tmp_path):
    """The example of docs/embedding.md, run as written."""
    probe = (
        "import json, sqlite3, sys; "
        "print(json.dumps([sqlite3.connect(':memory:').execute('select 6*7').fetchone()[0], "
        "'_tkinter' in sys.builtin_module_names, '_json' in sys.builtin_module_names]))"
    )
    result = _run_packer(_documented_packer(), noopt_dist, tmp_path, probe)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [42, False, True]


@pytest.mark.container
@pytest.mark.archive_reader
def test_the_required_extensions_alone_link_and_start(noopt_dist, tmp_path):
    """The same packer choosing nothing: PYTHON.json's `required` flags must name every
    module the core calls or imports to start, since no symbol scan fills the gaps."""
    source = _documented_packer()
    choice = re.search(r"^    wanted = .*$", source, re.M)
    assert choice, "the documented packer no longer chooses with `wanted = …`"
    source = source.replace(choice.group(0), "    wanted = []")
    result = _run_packer(source, noopt_dist, tmp_path, "import sys; print(sorted(sys.builtin_module_names))")
    assert result.returncode == 0, result.stderr
    assert {"atexit", "_datetime", "posix"} <= set(json.loads(result.stdout.replace("'", '"')))


@pytest.mark.parametrize(
    "path",
    ["install/..\\..\\..\\windows\\python.exe", "install\\python.exe", "install/C:python.exe"],
)
def test_a_path_windows_would_read_differently_is_off_schema(path):
    """Wine and Windows take a backslash as a separator and a colon as a drive or a
    stream: such a path could leave the tree there however it reads here."""
    errors = python_json.schema_errors({"python_exe": path})
    assert [e for e in errors if "python_exe" in e and "does not match" in e], errors
    plain = python_json.schema_errors({"python_exe": "install/python.exe"})
    assert not [e for e in plain if "python_exe" in e]


def test_a_folder_named_python_json_is_refused_in_one_line(tmp_path):
    (tmp_path / "python" / "PYTHON.json").mkdir(parents=True)
    with pytest.raises(PyfreightError, match=r"python/PYTHON.json cannot be read") as raised:
        python_json.checked_document(tmp_path / "python", tmp_path / "a.tar.zst")
    assert "\n" not in str(raised.value)
