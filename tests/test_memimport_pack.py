"""pack.py and the blob format, without a compiled executable: pack small trees with the driver's
own interpreter and read the blob back with blobformat.read_blob."""

from __future__ import annotations

import importlib.util
import marshal
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pyfreight import memimport
from pyfreight.memimport import blobformat as bf
from pyfreight.memimport import pack


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content)
    return root


@pytest.fixture
def fake_stdlib(tmp_path: Path) -> Path:
    return _write(
        tmp_path / "lib" / "python3.99",
        {
            "os2.py": "NAME = 'os2'\n",
            "json2/__init__.py": "from .decoder import VALUE\n",
            "json2/decoder.py": "VALUE = 7\n",
            "json2/tests/__init__.py": "",
            "json2/tests/test_x.py": "",
            "json2/data/table.txt": "a table\n",
            "json2/data/sub/deep.bin": b"\x00\xff",
            "email2/__init__.py": "",
            "email2/architecture.rst": "docs\n",
            "email2/mime/__init__.py": "",
            "email2/mime/text.py": "KIND = 'text'\n",
            "nsroot/portion.py": "P = 1\n",
            "idlelib/__init__.py": "",
            "idlelib/idle_test/__init__.py": "",
            "idlelib/config.def": "[x]\n",
            "broken.py": "def f(:\n",
            "latin.py": b"# -*- coding: latin-1 -*-\nS = '\xe9'\n",
            "test/__init__.py": "",
            "test/test_os.py": "",
            "site-packages/thirdparty.py": "",
            "lib-dynload/README": "",
            "config-3.99-x86_64-linux-gnu/Makefile": "",
            "__pycache__/os2.cpython-399.pyc": b"junk",
            "LICENSE.txt": "license\n",
            "_sysconfigdata__linux_x86_64-linux-gnu.py": "build_time_vars = {}\n",
        },
    )


def _names(blob: bf.Blob) -> dict[str, bf.Module]:
    return {m.name: m for m in blob.modules}


def test_pack_selects_modules_packages_and_resources(fake_stdlib: Path) -> None:
    result = pack.pack(fake_stdlib, [], sources=True)
    blob = bf.read_blob(result.blob)
    mods = _names(blob)

    assert sorted(mods) == [
        "_pyfreight_finder",
        "_sysconfigdata__linux_x86_64-linux-gnu",
        "email2",
        "email2.mime",
        "email2.mime.text",
        "idlelib",
        "json2",
        "json2.decoder",
        "latin",
        "nsroot",
        "nsroot.portion",
        "os2",
    ]
    assert result.failed and result.failed[0][0].endswith("broken.py")
    assert mods["json2"].flags & bf.FLAG_PACKAGE
    assert not mods["json2.decoder"].flags & bf.FLAG_PACKAGE
    assert mods["nsroot"].flags == bf.FLAG_PACKAGE | bf.FLAG_NAMESPACE
    assert mods["nsroot"].code == b""
    assert mods["_pyfreight_finder"].flags == bf.FLAG_BOOTSTRAP
    assert all(m.source is not None for m in blob.modules if m.code and m.name != "_pyfreight_finder")

    resources = {(r.package, r.path): r.data for r in blob.resources}
    assert resources == {
        ("json2", "data/table.txt"): b"a table\n",
        ("json2", "data/sub/deep.bin"): b"\x00\xff",
        ("email2", "architecture.rst"): b"docs\n",
        ("idlelib", "config.def"): b"[x]\n",
    }
    assert (result.modules, result.packages, result.namespaces, result.resources) == (11, 5, 1, 4)
    assert blob.bytecode_magic == importlib.util.MAGIC_NUMBER
    assert blob.hexversion == sys.hexversion
    assert blob.flags == bf.BLOB_HAS_SOURCES


def test_packed_code_runs_with_relative_filename(fake_stdlib: Path) -> None:
    mods = _names(bf.read_blob(pack.pack(fake_stdlib, []).blob))
    code = marshal.loads(mods["json2.decoder"].code)
    assert code.co_filename == "json2/decoder.py"
    namespace: dict[str, object] = {}
    exec(code, namespace)
    assert namespace["VALUE"] == 7
    # The coding cookie is honoured by compile() on the raw bytes.
    latin: dict[str, object] = {}
    exec(marshal.loads(mods["latin"].code), latin)
    assert latin["S"] == "\xe9"
    # Without --sources no source is kept.
    assert mods["latin"].source is None and not mods["latin"].flags & bf.FLAG_HAS_SOURCE


def test_optimize_level_strips_docstrings(tmp_path: Path) -> None:
    root = _write(tmp_path / "lib", {"doc.py": '"""module doc"""\nassert False, "asserted"\n'})
    for level, doc in ((0, "module doc"), (2, None)):
        mods = _names(bf.read_blob(pack.pack(root, [], optimize=level).blob))
        module = types.ModuleType("doc")
        if level == 0:
            with pytest.raises(AssertionError):
                exec(marshal.loads(mods["doc"].code), module.__dict__)
        else:
            exec(marshal.loads(mods["doc"].code), module.__dict__)
        assert module.__doc__ == doc


def test_app_directory_is_packed_beside_the_stdlib(fake_stdlib: Path, tmp_path: Path) -> None:
    app = _write(
        tmp_path / "app",
        {
            "appmain.py": "from apppkg import VALUE\n",
            "apppkg/__init__.py": "VALUE = 1\n",
            "apppkg/tests/__init__.py": "",
            "apppkg/templates/page.html": "<p/>",
            "apppkg/__pycache__/x.pyc": b"junk",
            ".hidden/x.py": "",
            "README.md": "not in a package",
        },
    )
    blob = bf.read_blob(pack.pack(fake_stdlib, [app]).blob)
    mods = _names(blob)
    assert mods["appmain"].flags & bf.FLAG_APP
    assert mods["apppkg"].flags & bf.FLAG_APP and mods["apppkg"].flags & bf.FLAG_PACKAGE
    # An application keeps its own tests package: only the stdlib drops test suites.
    assert "apppkg.tests" in mods
    assert not mods["json2"].flags & bf.FLAG_APP
    assert ("apppkg", "templates/page.html") in {(r.package, r.path) for r in blob.resources}
    assert not any(".hidden" in m.name for m in blob.modules)


def test_duplicate_module_between_stdlib_and_app_fails(fake_stdlib: Path, tmp_path: Path) -> None:
    app = _write(tmp_path / "app", {"os2.py": ""})
    with pytest.raises(SystemExit, match="os2"):
        pack.pack(fake_stdlib, [app])


def test_package_wins_over_module_and_module_over_namespace(tmp_path: Path) -> None:
    root = _write(
        tmp_path / "lib",
        {"both.py": "", "both/__init__.py": "", "mod.py": "", "mod/sub.py": ""},
    )
    mods = _names(bf.read_blob(pack.pack(root, []).blob))
    assert mods["both"].flags & bf.FLAG_PACKAGE
    assert mods["mod"].flags == 0


def test_output_is_deterministic(fake_stdlib: Path) -> None:
    first = pack.pack(fake_stdlib, [], sources=True).blob
    # Touching files and re-reading must not change a single byte.
    for path in fake_stdlib.rglob("*.py"):
        path.touch()
    assert pack.pack(fake_stdlib, [], sources=True).blob == first


def test_index_is_sorted_by_utf8_bytes(tmp_path: Path) -> None:
    root = _write(tmp_path / "lib", {"zeta.py": "", "Alpha.py": "", "émile.py": "", "_u.py": ""})
    names = [m.name for m in bf.read_blob(pack.pack(root, []).blob).modules]
    assert names == sorted(names, key=lambda n: n.encode())
    assert names[0] == "Alpha" and names[-1] == "émile"


def test_reader_rejects_corruption(fake_stdlib: Path) -> None:
    blob = pack.pack(fake_stdlib, []).blob
    with pytest.raises(bf.BlobError, match="magic"):
        bf.read_blob(b"X" + blob[1:])
    with pytest.raises(bf.BlobError, match="version"):
        bf.read_blob(blob[:8] + (2).to_bytes(4, "little") + blob[12:])
    with pytest.raises(bf.BlobError):
        bf.read_blob(blob[:-1])


def test_cli_as_script_writes_atomically(fake_stdlib: Path, tmp_path: Path) -> None:
    out = tmp_path / "out" / "stdlib.blob"
    out.parent.mkdir()
    # Run the way a build does: the file as a script, isolated mode, not as part of the package.
    proc = subprocess.run(
        [sys.executable, "-I", str(memimport.PACKER), "--stdlib", str(fake_stdlib), "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert "11 modules (5 packages, 1 namespace), 4 resources, 1 not compiled, 0 left out" in proc.stdout
    assert "broken.py" in proc.stderr
    assert bf.read_blob(out.read_bytes()).modules
    assert sorted(p.name for p in out.parent.iterdir()) == ["stdlib.blob"]

    strict = subprocess.run(
        [
            sys.executable,
            "-I",
            str(memimport.PACKER),
            "--stdlib",
            str(fake_stdlib),
            "--out",
            str(out),
            "--strict",
        ],
        capture_output=True,
        text=True,
    )
    assert strict.returncode == 1 and "--strict" in strict.stderr


def test_finder_source_compiles_without_future_import() -> None:
    # The finder runs before any non-frozen module can be imported: a __future__ import would fail.
    source = memimport.FINDER_PY.read_text()
    assert "from __future__" not in source.split('"""', 2)[2]
    compile(source, "<_pyfreight_finder>", "exec", dont_inherit=True)


def test_blob_asm(tmp_path: Path) -> None:
    blob = tmp_path / "x.blob"
    text = memimport.blob_asm(blob)
    assert f'.incbin "{blob.resolve()}"' in text
    assert ".section .pyfreight_blob" in text and ".note.GNU-stack" in text
    assert text.index("BLOB_START:") < text.index(".incbin") < text.index("BLOB_END:")
    with pytest.raises(ValueError):
        memimport.blob_asm(tmp_path / 'a"b.blob')


def test_dist_info_is_packed_as_metadata_and_excluded_names_are_left_out(
    fake_stdlib: Path, tmp_path: Path
) -> None:
    app = _write(
        tmp_path / "site",
        {
            "click/__init__.py": "",
            "click/core.py": "",
            "click-8.2.1.dist-info/METADATA": "Name: click\nVersion: 8.2.1\n",
            "click-8.2.1.dist-info/licenses/LICENSE.txt": "BSD",
            "fast/__init__.py": "",
        },
    )
    blob = bf.read_blob(pack.pack(fake_stdlib, [app], exclude=frozenset({"fast", "json2"})).blob)
    mods = _names(blob)
    assert "click.core" in mods and "fast" not in mods
    assert not any(name == "json2" or name.startswith("json2.") for name in mods)
    resources = {(r.package, r.path): r.data for r in blob.resources}
    assert resources[(bf.DISTRIBUTIONS, "click-8.2.1.dist-info/METADATA")].startswith(b"Name: click")
    assert (bf.DISTRIBUTIONS, "click-8.2.1.dist-info/licenses/LICENSE.txt") in resources
    assert bf.DISTRIBUTIONS not in mods  # metadata only: nothing can import that name


def test_an_application_packs_the_stdlib_it_reaches_and_lists_the_rest(
    fake_stdlib: Path, tmp_path: Path
) -> None:
    reach = tmp_path / "reach.json"
    reach.write_text('{"modules": ["json2.decoder", "email2"], "builtins": []}')
    out = tmp_path / "app.blob"
    proc = subprocess.run(
        [
            sys.executable,
            "-I",
            str(memimport.PACKER),
            "--stdlib",
            str(fake_stdlib),
            "--out",
            str(out),
            "--reach",
            str(reach),
            "--left-out",
            "_ssl",
            "--exclude",
            "idlelib",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    blob = bf.read_blob(out.read_bytes())
    # A reached module brings its packages, and a package's data comes with it.
    assert sorted(_names(blob)) == ["_pyfreight_finder", "email2", "json2", "json2.decoder"]
    resources = {(r.package, r.path): r.data for r in blob.resources}
    assert ("json2", "data/table.txt") in resources and ("email2", "architecture.rst") in resources
    # Everything else is named as left out, the extension named too; what is kept on the
    # filesystem (idlelib) is not, and neither is anything the stdlib does not hold.
    listed = resources[(bf.BOOTSTRAP_NAME, bf.LEFT_OUT)].decode().split("\n")
    assert listed == [
        "_ssl",
        "_sysconfigdata__linux_x86_64-linux-gnu",
        "broken",
        "email2.mime",
        "email2.mime.text",
        "latin",
        "nsroot",
        "nsroot.portion",
        "os2",
        "",
    ]
    assert "3 modules (2 packages, 0 namespace)" in proc.stdout and "9 left out" in proc.stdout


def test_compressed_modules_are_zstd_frames_that_read_back_the_same(fake_stdlib: Path) -> None:
    import zstandard

    def compress(data: bytes) -> bytes:
        return zstandard.ZstdCompressor(level=19).compress(data)

    plain = bf.read_blob(pack.pack(fake_stdlib, [], sources=True).blob)
    packed = pack.pack(fake_stdlib, [], sources=True, compress=compress).blob
    squeezed = bf.read_blob(packed)
    assert squeezed.flags == bf.BLOB_HAS_SOURCES | bf.BLOB_COMPRESSED
    for before, after in zip(plain.modules, squeezed.modules, strict=True):
        assert (before.name, before.code, before.source) == (after.name, after.code, after.source)
        # Every module with code is compressed but the finder, which install() runs first.
        expected = bool(before.code) and before.name != bf.BOOTSTRAP_NAME
        assert bool(after.flags & bf.FLAG_COMPRESSED) == expected, after.name
    raw = {m.name: m for m in plain.modules}["json2.decoder"].code
    assert raw not in packed and zstandard.ZstdCompressor(level=19).compress(raw) in packed
