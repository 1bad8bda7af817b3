"""The Windows target (x86_64-pc-windows-gnullvm), as far as it is built: its
dependencies cross-built by the README's `make windows-x86_64-deps` in the zig build
image with no network, checked as Windows objects, and used for real by one program
linked against all of them that runs under Wine in the target's runtime image; then the
interpreter built from CPython's own Visual Studio projects, run under Wine from a
folder it was not built in, the tree built again to the same bytes; then its three
archives: PYTHON.json for packers, validate, test-dist under Wine, uv's index entry, the
full archive reproduced from scratch, and `embed` linking a Windows interpreter and a
single-file .exe from it."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pefile
import pytest

from pyfreight import toolchain
from pyfreight.container.images import ensure_images
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.versions import cpython_source
from pyfreight.deps.recipe_build import ALLOWED_MENTION
from pyfreight.formats import arfile
from pyfreight.formats.tarball import extract, member_names, newest_mtime, read_member
from pyfreight.hashing import file_sha256
from pyfreight.paths import default_workspace
from pyfreight.runners.cpython_tests import load_test_suite
from pyfreight.runners.wine import (
    run_windows_program,
)
from pyfreight.sources.recipes import load_all
from pyfreight.targets import all_targets
from pyfreight.verify.pe_rules import check_pe_tree
from tests.conftest import pyfreight_cli, run_group

# The 64-bit x86 target: the other Windows targets have their parts in
# test_other_windows_targets_integration.py.
WINDOWS = next(t for t in all_targets().values() if t.run.kind == "wine" and t.pe.machine == "AMD64")
pytestmark = [pytest.mark.container, pytest.mark.part(WINDOWS.triple)]
REPO = Path(__file__).resolve().parent.parent
SMOKE = Path(__file__).parent / "windows" / "deps_smoke.c"
COFF_AMD64 = b"\x64\x86"  # IMAGE_FILE_MACHINE_AMD64, little-endian, a COFF object's first bytes
# What the smoke program links: every library the Windows recipes make, then the
# Windows libraries OpenSSL needs.
LIBRARIES = "-ltk86 -ltkstub86 -ltcl86 -ltclstub86 -lz -lbz2 -llzma -lzstd -lsqlite3 -lexpat -lmpdec -lffi"
LIBRARIES += " -lssl -lcrypto -lws2_32 -lcrypt32 -ladvapi32 -luser32"
# ... and those Tcl and Tk need (windows/projects.yaml, builtin_extensions.static._tkinter)
LIBRARIES += " -lnetapi32 -luserenv -lgdi32 -lcomdlg32 -limm32 -lcomctl32 -luuid -lole32 -loleaut32 -lshell32"
STATIC_DEFINES = "-DLZMA_API_STATIC -DXML_STATIC -DFFI_STATIC_BUILD -DSTATIC_BUILD"


@pytest.fixture(scope="module")
def windows_deps() -> dict[str, Path]:
    """`make windows-x86_64-deps`, as the README says; the artifacts it lists."""
    proc = run_group(["make", f"{WINDOWS.make_name}-deps"], cwd=REPO, timeout=3600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    listed = dict(re.findall(r"^(\S+)\s+(/\S+\.tar)$", proc.stdout, re.M))
    return {name: Path(path) for name, path in listed.items()}


def test_every_recipe_for_windows_is_built_and_no_other(windows_deps):
    recipes = load_all()
    expected = {n for n, r in recipes.items() if "windows" not in r.unavailable_on and not r.training_only}
    assert set(windows_deps) == expected
    # LLVM's profile runtime is built for a pgo build's training only, never as a dependency
    assert "llvm-profile-runtime" in recipes and "llvm-profile-runtime" not in windows_deps
    assert {"zlib", "openssl", "sqlite", "libffi"} <= expected and "ncurses" not in expected


def test_the_static_libraries_hold_only_amd64_coff_objects(windows_deps):
    for name, artifact in windows_deps.items():
        with subprocess.Popen(["tar", "tf", str(artifact)], stdout=subprocess.PIPE, text=True) as listing:
            members = listing.communicate()[0].split()
        libraries = [m for m in members if m.startswith("lib/") and m.endswith(".a")]
        assert libraries, f"{name}: no static library"
        scratch = artifact.with_suffix(".check")
        shutil.rmtree(scratch, ignore_errors=True)
        extract(artifact, scratch)
        try:
            for library in libraries:
                objects = arfile.members(scratch / library)
                assert objects, library
                for member, data in objects:
                    assert data[:2] == COFF_AMD64, f"{name}: {library}({member}) is not an AMD64 COFF object"
                    # as the artifact check: OpenSSL records its flags, the prefix map's text among them
                    scrubbed = data.replace(ALLOWED_MENTION, b"")
                    assert b"/build/work" not in scrubbed, (
                        f"{name}: {library}({member}) names the build folder"
                    )
        finally:
            shutil.rmtree(scratch)


def test_a_program_linked_against_every_dependency_runs_under_wine(windows_deps, tmp_path):
    ws = default_workspace()
    prefix, out = tmp_path / "prefix", tmp_path / "out"
    out.mkdir()
    for artifact in windows_deps.values():
        extract(artifact, prefix)
    shutil.copy(SMOKE, out / SMOKE.name)
    out.chmod(0o777)  # the build image's unprivileged builder writes the program here
    image = ensure_images(ws, WINDOWS)
    env = toolchain.build_environment(WINDOWS, jobs=1, source_date_epoch=0)
    compile_and_link = (
        f"$CC $CFLAGS {STATIC_DEFINES} -I{toolchain.PREFIX}/include /out/{SMOKE.name} -o /out/smoke.exe "
        f"$LDFLAGS {LIBRARIES}"
    )
    run(
        RunSpec(
            image=image.tag,
            command=["bash", "-euc", compile_and_link],
            what="linking the Windows smoke program",
            mounts=[Mount(prefix, toolchain.PREFIX), Mount(out, "/out", read_only=False)],
            env=env,
            user="1000:1000",
        )
    )
    assert (out / "smoke.exe").read_bytes()[:2] == b"MZ"
    printed = run_windows_program(WINDOWS, ws, out, "smoke.exe", what="the Windows smoke program").stdout
    lines = dict(line.split(" ", 1) for line in printed.replace("\r", "").splitlines() if " " in line)
    versions = {name: recipe.version for name, recipe in load_all().items()}
    assert lines["zlib"] == f"{versions['zlib']} 1"
    assert lines["bzip2"] == "1"
    assert lines["xz"] == f"{versions['xz']} 1"
    assert lines["zstd"] == f"{versions['zstd']} 1"
    assert lines["sqlite"] == "1|static libraries|3"
    assert lines["expat"] == "4"
    assert lines["mpdecimal"] == "0.142857142857142857142857142857"
    assert lines["libffi"] == "2000000000042"
    # SHA-256 of "abc" (FIPS 180-2, appendix B.1)
    sha_abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert lines["openssl"] == f"{versions['openssl']} {sha_abc}"
    assert lines["tcl"] == f"42 {versions['tcl']} 1"


@pytest.fixture(scope="module")
def windows_tree() -> Path:
    """The Windows interpreter's tree, built as docs/targets.md says."""
    proc = pyfreight_cli(
        "build", "--target", WINDOWS.make_name, "--options", "noopt", "--no-dist", "--no-check"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    tree = Path(re.findall(r"^install tree: (\S+)$", proc.stdout, re.M)[-1])
    assert (tree / "python.exe").read_bytes()[:2] == b"MZ"
    return tree


PROBE = r"""
import sys, os, json, hashlib, zlib, pathlib, re, decimal, importlib, pkgutil
failed = {}
for name in sorted({m.name for m in pkgutil.iter_modules()} | set(sys.builtin_module_names)):
    if name.startswith(("test", "idlelib", "turtledemo", "__")) or name in ("antigravity", "this"):
        continue
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
import bz2, ctypes, lzma, sqlite3, ssl, uuid, unicodedata, pyexpat, compression.zstd as zstd
import xml.etree.ElementTree as ET
data = b"pyfreight " * 100
sql = sqlite3.connect(":memory:")
sql.execute("create virtual table t using fts5(x)")
print(json.dumps({
    "version": sys.version.split()[0],
    "platform": sys.platform,
    "prefix_is_here": os.path.samefile(sys.prefix, os.path.dirname(sys.executable)),
    "sha256": hashlib.sha256(b"abc").hexdigest(),
    "compression": [m.decompress(m.compress(data)) == data for m in (zlib, bz2, lzma, zstd)],
    "decimal": str(decimal.Decimal(1) / decimal.Decimal(7)),
    "libraries": [ssl.OPENSSL_VERSION, sqlite3.sqlite_version, pyexpat.EXPAT_VERSION,
                  decimal.__libmpdec_version__],
    "json1": sql.execute("select json_extract('[5]', '$[0]')").fetchone()[0],
    "win32_api": ctypes.windll.kernel32.GetCurrentProcessId() == os.getpid(),
    "cert_store": isinstance(ssl.enum_certificates("ROOT"), list),
    "unicodedata": unicodedata.name("\u00e9"),
    "xml": ET.fromstring("<a><b>t</b></a>").find("b").text,
    "uuid": uuid.uuid4().version,
    "python3_dll": ctypes.PyDLL(os.path.join(sys.base_prefix, "python3.dll")).Py_IsInitialized(),
    "venv_launchers": sorted(os.listdir(os.path.join(sys.base_prefix, "Lib", "venv", "scripts", "nt"))),
    "platform_tag": __import__("sysconfig").get_platform(),
    "extension_suffixes": __import__("importlib.machinery").machinery.EXTENSION_SUFFIXES,
    "builtins": len(sys.builtin_module_names),
    "tcl": __import__("tkinter").Tcl().eval("info patchlevel"),
    "failed": failed,
}))
"""
# What does not import, each with why: not Windows modules at all.
NOT_ON_WINDOWS = {"curses", "pty", "tty", "_ios_support"}  # _curses/termios/ObjC: Unix or Apple only


def test_the_interpreter_runs_under_wine_from_any_folder(windows_tree, tmp_path):
    moved = tmp_path / "elsewhere" / "python"
    shutil.copytree(windows_tree, moved, symlinks=True)
    (moved.parent / "probe.py").write_text(PROBE)
    moved.parent.chmod(0o755)
    result = run_windows_program(
        WINDOWS, default_workspace(), moved.parent, "python/python.exe", ["probe.py"]
    )
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found["version"] == cpython_source(None).version and found["platform"] == "win32"
    assert found["prefix_is_here"] is True  # the prefix is found beside python.exe, wherever it is
    assert found["sha256"] == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    assert found["compression"] == [True] * 4 and found["decimal"] == "0.1428571428571428571428571429"
    recipes = load_all()
    openssl, sqlite, expat, mpdecimal = found["libraries"]
    assert openssl.startswith(f"OpenSSL {recipes['openssl'].version} ")  # ours, built in
    assert sqlite == recipes["sqlite"].version and expat == f"expat_{recipes['expat'].version}"
    assert mpdecimal == recipes["mpdecimal"].version
    assert found["json1"] == 5 and found["win32_api"] is True and found["cert_store"] is True
    assert found["unicodedata"] == "LATIN SMALL LETTER E WITH ACUTE" and found["xml"] == "t"
    assert found["uuid"] == 4 and found["builtins"] > 80
    assert found["python3_dll"] == 1  # python3.dll forwards to the running python314.dll
    assert {"venvlauncher.exe", "venvwlauncher.exe"} <= set(found["venv_launchers"])
    # what pip chooses wheels by, and the file names PyPI's win_amd64 wheels ship
    assert found["platform_tag"] == "win-amd64"
    assert found["extension_suffixes"] == [".cp314-win_amd64.pyd", ".pyd"]
    assert found["tcl"] == recipes["tcl"].version  # tkinter's Tcl, ours, built into the DLL
    assert set(found["failed"]) == NOT_ON_WINDOWS, found["failed"]


@pytest.fixture(scope="module")
def windows_archives(windows_tree, tmp_path_factory) -> dict[str, Path]:
    """The three archives of the Windows build, as `pyfreight build` writes them."""
    dist = tmp_path_factory.mktemp("windows-dist")
    proc = pyfreight_cli(
        "build", "--target", WINDOWS.make_name, "--options", "noopt", "--no-check",
        PYFREIGHT_DIST_DIR=str(dist),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = {p.name.rsplit("-", 1)[-1]: p for p in dist.iterdir()}
    assert set(found) == {"full.tar.zst", "install_only.tar.gz", "install_only_stripped.tar.gz"}, found
    return found


def test_the_full_archive_tells_packers_how_the_windows_interpreter_is_linked(windows_archives):
    """PYTHON.json of a Windows build: python.exe and python314.dll, COFF objects, the
    UCRT, every built-in extension with its own objects and the recipe libraries it
    links (shipped, with their licenses), Windows' libraries by their Windows names."""
    full = windows_archives["full.tar.zst"]
    document = json.loads(read_member(full, "python/PYTHON.json"))
    assert document["target_triple"] == WINDOWS.triple and document["python_platform_tag"] == "win-amd64"
    assert document["python_exe"] == "install/python.exe"
    assert document["python_paths"]["stdlib"] == "install/Lib"
    assert document["python_paths"]["include"] == "install/include"  # sysconfig says Include
    assert document["crt_features"] == ["ucrt-dynamic"] and document["libpython_link_mode"] == "shared"
    assert document["python_symbol_visibility"] == "dllexport"
    info = document["build_info"]
    assert info["object_file_format"] == "coff"
    assert info["core"]["shared_lib"] == "install/python314.dll"
    assert info["inittab_source"] == "build/config.c" and info["inittab_object"] in info["core"]["objs"]
    assert {"name": "pathcch", "system": True} in info["core"]["links"]
    assert {"name": "z", "path_static": "build/lib/libz.a"} in info["core"]["links"]
    (ssl,) = info["extensions"]["_ssl"]
    assert ssl["in_core"] is False and ssl["objs"] == ["build/obj/_ssl/Modules/_ssl.o"]
    assert {"name": "ssl", "path_static": "build/lib/libssl.a"} in ssl["links"]
    assert ssl["licenses"] == ["Apache-2.0"] and ssl["license_paths"]
    assert info["extensions"]["winreg"][0]["in_core"] is True
    (tkinter,) = info["extensions"]["_tkinter"]  # static Tcl and Tk, and what they link
    assert {"name": "tcl86", "path_static": "build/lib/libtcl86.a"} in tkinter["links"]
    assert {"name": "comctl32", "system": True} in tkinter["links"]
    assert document["tcl_library_path"] == "install/tcl"
    assert document["tcl_library_paths"] == ["tcl8", "tcl8.6", "tk8.6"]
    objects = [n for n in member_names(full) if n.startswith("python/build/obj/") and n.endswith(".o")]
    assert len(objects) > 250
    assert read_member(full, "python/" + ssl["objs"][0])[:2] == b"\x64\x86"  # COFF, AMD64


def test_the_windows_archives_validate_and_a_pyd_beside_the_dll_is_named(windows_archives, tmp_path):
    proc = pyfreight_cli("validate", *sorted(windows_archives.values()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("passed") == 3, proc.stdout
    # every extension is built into python314.dll: a .pyd in DLLs/ is a broken archive
    unpacked = tmp_path / "unpacked"
    extract(windows_archives["install_only.tar.gz"], unpacked)
    shutil.copy(unpacked / "python" / "python3.dll", unpacked / "python" / "DLLs" / "_socket.pyd")
    broken = tmp_path / "broken-install_only.tar.gz"
    subprocess.run(["tar", "czf", broken, "-C", unpacked, "python"], check=True)
    proc = pyfreight_cli("validate", broken)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "python/DLLs/_socket.pyd: an extension module as a .pyd" in proc.stdout, proc.stdout
    # without the stable ABI's forwarder, and with a second interpreter DLL beside the first
    (unpacked / "python" / "DLLs" / "_socket.pyd").unlink()
    shutil.move(unpacked / "python" / "python3.dll", unpacked / "python" / "python314t.dll")
    subprocess.run(["tar", "czf", broken, "-C", unpacked, "python"], check=True)
    proc = pyfreight_cli("validate", broken)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "python/python3.dll: missing: the stable ABI's forwarder" in proc.stdout, proc.stdout
    two = "python/python3XX.dll: not exactly one interpreter DLL (python3XXt.dll free-threaded)"
    assert two in proc.stdout, proc.stdout


def test_the_stripped_archive_passes_test_dist_under_wine(windows_archives):
    proc = pyfreight_cli("test-dist", windows_archives["install_only_stripped.tar.gz"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAIL" not in proc.stdout and "install_only_stripped has no test package" in proc.stderr


def test_the_full_archive_passes_test_dist_with_its_run_tests_entry(windows_archives):
    proc = pyfreight_cli("test-dist", windows_archives["full.tar.zst"], "--tests", "none")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert re.search(r"^PASS  run_tests entry of PYTHON.json$", proc.stdout, re.M), proc.stdout[-3000:]


def test_the_release_index_gives_uv_a_windows_download(windows_archives, tmp_path):
    """uv's key for it is windows-x86_64-none; uv lists it from our index (it cannot
    install a Windows Python on this Linux machine, so listing is what is shown)."""
    out = tmp_path / "release"
    full = windows_archives["full.tar.zst"]
    made = pyfreight_cli("release", full, "--base-url", f"file://{out}", "-o", out)
    assert made.returncode == 0, made.stderr[-3000:]
    env = {**os.environ, "UV_OFFLINE": "1", "UV_CACHE_DIR": str(tmp_path / "cache"),
           "UV_PYTHON_DOWNLOADS_JSON_URL": f"file://{out}/downloads.json"}  # fmt: skip
    listed = subprocess.run(
        [str(REPO / ".venv" / "bin" / "uv"), "python", "list", "--only-downloads", "--all-platforms",
         "--all-versions"],
        capture_output=True, text=True, env=env, check=True,
    ).stdout  # fmt: skip
    version = cpython_source(None).version
    assert f"cpython-{version}-windows-x86_64-none" in listed, listed


def test_the_full_archive_is_reproduced_from_scratch(windows_archives):
    """`pyfreight reproduce`: the dependencies and CPython built again for Windows in an
    empty build folder, the archive written again: the same bytes (PE timestamps are the
    source's date, the images are linked without a debug directory)."""
    proc = pyfreight_cli("reproduce", windows_archives["full.tar.zst"], timeout=BUILD_TIMEOUT_S)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "identical" in proc.stdout, proc.stdout[-2000:]


def test_embed_links_a_windows_interpreter_from_the_full_archive_alone(windows_archives, tmp_path):
    """`pyfreight embed` with the target's pinned zig: python.exe with every module of
    python314.dll linked in, which runs from the unpacked install_only tree with the
    DLLs removed (so it can only be its own code)."""
    (tmp_path / "out").mkdir()
    proc = pyfreight_cli("embed", windows_archives["full.tar.zst"], "-o", tmp_path / "out" / "python.exe")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "clang version" in proc.stdout and "left out:   (none)" in proc.stdout, proc.stdout
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["python.exe"]  # nothing beside it
    extract(windows_archives["install_only.tar.gz"], tmp_path / "run")
    tree = tmp_path / "run" / "python"
    for dll in ("python314.dll", "python3.dll", "python.exe"):
        (tree / dll).unlink()
    shutil.copy(tmp_path / "out" / "python.exe", tree / "python.exe")
    facts = pefile.PE(str(tree / "python.exe"))
    imported = {e.dll.decode().lower() for e in facts.DIRECTORY_ENTRY_IMPORT}
    assert not any(name.startswith("python") for name in imported), imported
    code = "import sys, ssl, sqlite3, lzma; print(ssl.OPENSSL_VERSION, sqlite3.sqlite_version, sys.prefix)"
    result = run_windows_program(
        WINDOWS, default_workspace(), tmp_path / "run", "python/python.exe", ["-c", code]
    )
    assert result.stdout.startswith("OpenSSL 3."), result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("\\work\\python"), result.stdout  # its prefix: its own folder


def _single_file_exe(archive: Path, tmp_path: Path, name: str, code: str, *flags: str) -> Path:
    """`pyfreight embed --memory-importer --main NAME:main` of a one-module application,
    written into an empty folder that then holds nothing but NAME.exe; its folder."""
    app = tmp_path / "app" / name
    app.mkdir(parents=True)
    (app / "__init__.py").write_text(code)
    alone = tmp_path / "alone"
    alone.mkdir()
    proc = pyfreight_cli(
        "embed", archive, "-o", alone / f"{name}.exe", "--memory-importer",
        *flags, "--app", app.parent, "--main", f"{name}:main",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in alone.iterdir()) == [f"{name}.exe"]
    alone.chmod(0o755)
    print(f"single-file {name}.exe {' '.join(flags)}: {(alone / f'{name}.exe').stat().st_size / 1e6:.1f} MB")
    return alone


def test_a_single_file_exe_runs_alone_and_imports_the_stdlib_from_memory(windows_archives, tmp_path):
    """`pyfreight embed --memory-importer --main`: one .exe, started in an empty folder
    under Wine, runs the application, which imports the stdlib (json, ssl) from the
    executable itself; the packer ran as the archive's python.exe under Wine. The
    program carries python.exe's manifest (pefile finds it where Windows reads it), so
    Windows, and Wine, tell it the version it runs on, not Windows 8's 6.2."""
    code = (
        "import json, ssl, sys\n"
        "def main():\n"
        "    v = sys.getwindowsversion()\n"
        "    print('told', f'{v.major}.{v.minor}', 'on', '.'.join(map(str, v.platform_version[:2])))\n"
        "    print('hello', json.dumps([sys.version_info[:2]]), ssl.OPENSSL_VERSION, json.__file__)\n"
    )
    alone = _single_file_exe(
        windows_archives["full.tar.zst"], tmp_path, "hello", code, "--no-sources", "--optimize", "2"
    )
    image = pefile.PE(str(alone / "hello.exe"))
    (manifests,) = [e for e in image.DIRECTORY_ENTRY_RESOURCE.entries if e.id == 24]
    (entry,) = [e.directory.entries[0].data.struct for e in manifests.directory.entries if e.id == 1]
    manifest = image.get_data(entry.OffsetToData, entry.Size)
    assert b"{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}" in manifest and b">true</longPathAware>" in manifest
    result = run_windows_program(WINDOWS, default_workspace(), alone, "hello.exe")
    told, hello = result.stdout.splitlines()
    assert re.fullmatch(r"told (\d+\.\d+) on \1", told), told
    assert hello.startswith("hello [[3, 14]] OpenSSL 3."), result.stdout + result.stderr
    assert hello.rstrip().endswith("hello.exe/json/__init__.py"), result.stdout  # from memory


def test_a_single_file_exe_with_a_pypi_package_packs_what_it_reaches_and_runs_alone(
    windows_archives, tmp_path
):
    """The defaults of a Windows application as of Linux ones: rich from PyPI (its wheels
    downloaded by this machine's pip for win_amd64, installed under Wine offline by the
    archive's pip) packed, only the stdlib it reaches, compressed; one .exe run alone. A
    compiled package (.pyd needs python3XX.dll) is refused in one line."""
    app = tmp_path / "app" / "table"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text(
        "import sys\nfrom rich.console import Console\nfrom rich.table import Table\n"
        "def main():\n"
        "    table = Table('tool', 'files')\n    table.add_row('pyfreight', '1')\n"
        "    Console(width=40, color_system=None).print(table)\n"
        "    import importlib\n"
        "    importlib.import_module(sys.argv[1])\n"
    )
    (tmp_path / "requirements.txt").write_text("rich==15.0.0\n")
    alone = tmp_path / "alone"
    alone.mkdir()
    proc = pyfreight_cli(
        "embed", windows_archives["full.tar.zst"], "-o", alone / "table.exe", "--memory-importer",
        "--app", app.parent, "--main", "table:main", "--requirements", tmp_path / "requirements.txt",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "modules reached" in proc.stderr and "_tkinter" in proc.stdout.split("left out:")[1], proc.stdout
    assert sorted(p.name for p in alone.iterdir()) == ["table.exe"]
    alone.chmod(0o755)
    ran = run_windows_program(WINDOWS, default_workspace(), alone, "table.exe", ["json"])
    # rich draws with box characters or, where the code page has none, ASCII ones
    assert re.search(r"^\W pyfreight \W 1 +\W$", ran.stdout, re.MULTILINE), ran.stdout + ran.stderr
    # wave: a module neither the application nor rich, pygments or markdown-it imports
    left_out = run_windows_program(WINDOWS, default_workspace(), alone, "table.exe", ["wave"], check=False)
    assert left_out.returncode == 1 and left_out.stderr.strip().splitlines()[-1].endswith(
        "make the program with --include-module wave"
    ), left_out.stderr
    # The application's own sources are packed: the traceback shows its line.
    assert "    importlib.import_module(sys.argv[1])" in left_out.stderr, left_out.stderr
    print(f"single-file table.exe: {(alone / 'table.exe').stat().st_size / 1e6:.1f} MB")

    (tmp_path / "requirements.txt").write_text(f"markupsafe=={WHEELS['markupsafe']}\n")  # has cp314 wheels
    compiled = pyfreight_cli(
        "embed", windows_archives["full.tar.zst"], "-o", tmp_path / "escape.exe", "--memory-importer",
        "--app", app.parent, "--main", "table:main", "--requirements", tmp_path / "requirements.txt",
    )  # fmt: skip
    assert compiled.returncode == 1 and "Traceback" not in compiled.stderr, compiled.stderr
    assert "markupsafe: compiled modules (.pyd) load only beside python314.dll" in compiled.stderr, (
        compiled.stderr
    )


def test_a_single_file_exe_with_static_code_objects_runs_alone(windows_archives, tmp_path):
    """--static-code for Windows: the generator runs as the archive's python.exe under Wine,
    its C is compiled by the pinned zig for the target, and the .exe runs alone; a function
    of the packed stdlib and of the application are static code objects (immortal), not
    ones unmarshalled from the blob."""
    code = (
        "import json, sys\n"
        "def main():\n"
        "    # static code objects are immortal: 3.13-3.15 keep their counts at 2**30 and above\n"
        "    static = [sys.getrefcount(f.__code__) >= 2**29 for f in (json.dumps, main)]\n"
        "    print(json.dumps([1, 2]), *static)\n"
    )
    alone = _single_file_exe(windows_archives["full.tar.zst"], tmp_path, "probe", code, "--static-code")
    result = run_windows_program(WINDOWS, default_workspace(), alone, "probe.exe")
    assert result.stdout.split() == ["[1,", "2]", "True", "True"], result.stdout + result.stderr


def test_building_the_tree_again_gives_the_same_bytes(windows_tree):
    """The Windows tree is reproducible: --force builds it again from the same inputs."""
    artifact = windows_tree.with_name(windows_tree.name + ".tar")
    first = file_sha256(artifact)
    proc = pyfreight_cli(
        "build", "--target", WINDOWS.make_name, "--options", "noopt", "--no-dist", "--no-check", "--force"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert file_sha256(artifact) == first


# PyPI's own wheels for Windows, compiled by their authors with Visual Studio.
WHEELS = {"markupsafe": "3.0.4", "numpy": "2.5.5"}


@pytest.fixture(scope="module")
def pypi_wheels(tmp_path_factory) -> Path:
    """A folder holding downloads/: the win_amd64 wheels, fetched on the host by pip from
    the index it is configured with."""
    folder = tmp_path_factory.mktemp("wheels")
    minor = cpython_source(None).minor
    tag = minor.replace(".", "")
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
         "--platform", "win_amd64", "--python-version", minor, "--implementation", "cp", "--abi", f"cp{tag}",
         "--dest", str(folder / "downloads"), *(f"{n}=={v}" for n, v in WHEELS.items())],
        check=True, timeout=600,
    )  # fmt: skip
    return folder


# Run under Wine by the unpacked install_only archive's python.exe: a venv, pip
# installing PyPI's wheels into it from downloads/ (no network), then their code.
VENV_WITH_PYPI_WHEELS = """
import os, subprocess, sys
subprocess.run([sys.executable, "-m", "venv", "env"], check=True)
python = os.path.join("env", "Scripts", "python.exe")
pip = [python, "-m", "pip", "--disable-pip-version-check"]
install = ["install", "--no-index", "--find-links", "downloads", "--quiet", *sys.argv[1:]]
subprocess.run([*pip, *install], check=True)
listed = subprocess.run([*pip, "list", "--format", "freeze"], capture_output=True, text=True)
print(listed.stdout, flush=True)
subprocess.run([python, "-c", "import os, sys, markupsafe, markupsafe._speedups as speedups; print("
                "markupsafe.escape('<a>&'), os.path.relpath(speedups.__file__, sys.prefix))"], check=True)
subprocess.run([python, "-c", "import numpy; "
                "print(numpy.linalg.inv(numpy.array([[2.0, 1.0], [1.0, 3.0]])).round(2).tolist())"])
"""


def test_pypis_own_wheels_install_with_pip_in_a_venv_and_run_under_wine(windows_archives, pypi_wheels):
    """`python -m venv` (pip in it by the bundled ensurepip), then pip installs
    markupsafe's and numpy's win_amd64 wheels (built by their authors with MSVC) into
    it, from the unpacked install_only archive, under Wine 10 with nothing adapted (Wine
    8.0 aborted venv's and pip's copies on CopyFile2). markupsafe's compiled
    speedups import into our clang-built python314.dll and run. numpy gets as far as
    calling crealf in the UCRT, which Wine (8.0, and 10.0 too) does not implement: a limit
    of Wine, named here so that the test says when a Wine update lifts it."""
    work = pypi_wheels / "run"
    work.mkdir()
    shutil.copytree(pypi_wheels / "downloads", work / "downloads")
    extract(windows_archives["install_only.tar.gz"], work)  # as users unpack it: python/
    (work / "venv_wheels.py").write_text(VENV_WITH_PYPI_WHEELS)
    for path in (work, *work.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o755)  # Wine's user makes the venv here
    result = run_windows_program(
        WINDOWS, default_workspace(), work, "python/python.exe", ["venv_wheels.py", *WHEELS],
        check=False, writable=True,
    )  # fmt: skip
    lines = result.stdout.splitlines()
    output = result.stdout + result.stderr
    listed = {line.lower() for line in lines}  # pip lists the names as their projects spell them
    assert {f"{name}=={version}" for name, version in WHEELS.items()} <= listed, output
    # the compiled module, from the venv's site-packages
    assert "&lt;a&gt;&amp; Lib\\site-packages\\markupsafe\\_speedups.cp314-win_amd64.pyd" in lines, output
    assert "unimplemented function ucrtbase.dll.crealf" in result.stdout + result.stderr


# PyPI's clients and wheels a Windows user meets first, pinned: uv (Rust), and wheels
# built by their authors with MSVC, cryptography's with Rust inside.
CLIENT_WHEELS = {
    "markupsafe": "3.0.4", "cryptography": "50.0.2", "cffi": "2.1.1", "pycparser": "3.12",
    "lxml": "6.1.3", "pillow": "13.0.0",
}  # fmt: skip
UV = ("uv", "0.13.9")


@pytest.fixture(scope="module")
def client_downloads(tmp_path_factory) -> Path:
    """The pinned win_amd64 wheels (downloads/) and uv's (uv-wheel/), fetched on the
    host by pip from the index it is configured with."""
    folder = tmp_path_factory.mktemp("clients")
    minor = cpython_source(None).minor
    tag = minor.replace(".", "")
    wanted = [f"{n}=={v}" for n, v in CLIENT_WHEELS.items()]
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
         "--platform", "win_amd64", "--python-version", minor, "--implementation", "cp", "--abi", f"cp{tag}",
         "--dest", str(folder / "downloads"), *wanted],
        check=True, timeout=600,
    )  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
         "--platform", "win_amd64", "--dest", str(folder / "uv-wheel"), "==".join(UV)],
        check=True, timeout=600,
    )  # fmt: skip
    return folder


# Run under Wine by the unpacked install_only archive's python.exe: uv.exe makes a venv
# of it and installs the wheels from downloads/ (offline), and `python -m venv` makes a
# second one that the tree's own pip installs them into; then each venv's python uses
# every wheel's compiled code.
CLIENTS = r"""
import os, subprocess, sys
uv = os.path.join("uv", "uv.exe")
env = dict(os.environ, UV_OFFLINE="1", UV_NO_CACHE="1", UV_PYTHON_DOWNLOADS="never", UV_NO_CONFIG="1")
subprocess.run([uv, "venv", "--python", sys.executable, "env"], check=True, env=env)
python = os.path.join("env", "Scripts", "python.exe")
install = [uv, "pip", "install", "--python", python, "--no-index", "--find-links", "downloads"]
subprocess.run([*install, *sys.argv[1:]], check=True, env=env)
sys.stdout.flush()
subprocess.run([uv, "pip", "list", "--python", python, "--format", "freeze"], check=True, env=env)
# The tree's own pip, as users run it (Scripts\\pip.exe), installs the same wheels into a
# second venv, made by the tree's venv module.
subprocess.run([sys.executable, "-m", "venv", "--without-pip", "pip-env"], check=True)
pip_python = os.path.join("pip-env", "Scripts", "python.exe")
pip = [os.path.join("python", "Scripts", "pip.exe"), "--python", pip_python, "--disable-pip-version-check"]
subprocess.run([*pip, "install", "--no-index", "--find-links", "downloads", *sys.argv[1:]], check=True)
USE = '''
import io, os, sys
import markupsafe, markupsafe._speedups
print("markupsafe", markupsafe.escape("<a>"), os.path.basename(markupsafe._speedups.__file__), flush=True)
from lxml import etree
print("lxml", etree.fromstring("<a><b>x</b></a>").xpath("string(//b)"), flush=True)
from PIL import Image
png = io.BytesIO()
Image.new("RGB", (3, 2), "red").save(png, "PNG")
print("pillow", Image.open(io.BytesIO(png.getvalue())).size, flush=True)
from cryptography.fernet import Fernet
key = Fernet(Fernet.generate_key())
print("cryptography", key.decrypt(key.encrypt(b"freight")).decode(), flush=True)
'''
for venv, interpreter in (("uv", python), ("pip", pip_python)):
    used = subprocess.run([interpreter, "-c", USE], capture_output=True, text=True)
    print(f"-- {venv} venv: exit {used.returncode}")
    print(used.stdout + used.stderr.strip()[-500:], flush=True)
"""


def test_uv_makes_a_venv_of_the_tree_and_pypis_compiled_wheels_run_under_wine(
    windows_archives, client_downloads
):
    """uv.exe (from its win_amd64 wheel) makes a venv of the unpacked install_only
    archive's python.exe and installs markupsafe's, lxml's, pillow's and cryptography's
    win_amd64 wheels into it from a folder (offline), and the tree's own Scripts\\pip.exe
    does the same into a venv the tree's venv module makes; in each, every wheel's
    compiled module runs, with Wine's own VC runtime off. Nothing is supplied: Wine 10
    has the bcryptprimitives.dll (ProcessPrng) that every Rust program, uv.exe and
    cryptography's _rust among them, imports, which Wine 8.0 lacked."""
    work = client_downloads / "run"
    work.mkdir()
    shutil.copytree(client_downloads / "downloads", work / "downloads")
    (uv_wheel,) = (client_downloads / "uv-wheel").glob("uv-*.whl")
    (work / "uv").mkdir()
    with zipfile.ZipFile(uv_wheel) as wheel:
        (work / "uv" / "uv.exe").write_bytes(wheel.read(f"{UV[0]}-{UV[1]}.data/scripts/uv.exe"))
    extract(windows_archives["install_only.tar.gz"], work)  # as users unpack it: python/
    (work / "clients.py").write_text(CLIENTS)
    for path in (work, *work.rglob("*")):
        path.chmod(0o777 if path.is_dir() else 0o755)  # Wine's user makes the venv here
    result = run_windows_program(
        WINDOWS, default_workspace(), work, "python/python.exe", ["clients.py", *CLIENT_WHEELS],
        check=False, writable=True,
    )  # fmt: skip
    output = (result.stdout + result.stderr).replace("\r", "")
    listed = {line.lower() for line in output.splitlines()}
    assert {f"{n}=={v}" for n, v in CLIENT_WHEELS.items()} <= listed, output[-3000:]
    found = re.findall(r"^-- (.+): exit (\d+)\n((?:(?!-- ).*\n?)*)", output, re.M)
    runs = {name: (code, text) for name, code, text in found}
    assert sorted(runs) == ["pip venv", "uv venv"], output[-3000:]
    speedups = "markupsafe &lt;a&gt; _speedups.cp314-win_amd64.pyd"
    for name in ("uv venv", "pip venv"):
        code, text = runs[name]
        assert code == "0", (name, text)
        for used in (speedups, "lxml x", "pillow (3, 2)", "cryptography freight"):
            assert used in text.splitlines(), (name, text)


def test_the_pe_rules_pass_the_tree(windows_tree):
    """Machine, imports (Windows' own DLLs, the UCRT's and the tree's own), ASLR, DEP, no
    debug directory, the C API exported, no bundled library's symbol and no build path
    in any image's bytes: all hold."""
    facts, problems = check_pe_tree(windows_tree, WINDOWS)
    distlib = "Lib/site-packages/pip/_vendor/distlib"
    assert sorted(f.path for f in facts) == [
        *(f"{distlib}/{name}" for name in ("t32.exe", "t64-arm.exe", "t64.exe", "w32.exe", "w64-arm.exe")),
        f"{distlib}/w64.exe",
        "Lib/venv/scripts/nt/venvlauncher.exe", "Lib/venv/scripts/nt/venvwlauncher.exe",
        "Scripts/pip.exe", "Scripts/pip3.14.exe", "Scripts/pip3.exe",
        "python.exe", "python3.dll", "python314.dll", "pythonw.exe", "vcruntime140.dll", "vcruntime140_1.dll",
    ]  # fmt: skip
    for name, pinned in WINDOWS.pe.redistributed.items():  # Microsoft's, unmodified
        assert file_sha256(windows_tree / name) == pinned, name
    # pip's console scripts: its x86_64 launcher, then a shebang relative to it
    launcher = (windows_tree / distlib / "t64.exe").read_bytes()
    script = (windows_tree / "Scripts/pip.exe").read_bytes()
    assert script.startswith(launcher + b"#!<launcher_dir>\\..\\python.exe\n"), script[len(launcher) :][:80]
    dll = next(f for f in facts if f.path == "python314.dll")
    assert len(dll.exported) > 1500 and dll.timestamp == _source_epoch()
    assert {f.path for f in facts if f.forwarded} == {"python3.dll"}
    assert problems == []


def test_c_runtime_calls_are_guarded_by_a_silent_invalid_parameter_handler(windows_tree):
    """The UCRT ends the process when a C runtime call gets a bad argument, unless the
    thread's invalid-parameter handler is replaced, as CPython does around such calls
    (_Py_BEGIN_SUPPRESS_IPH) when it knows the UCRT (cpython-patches/
    ucrt-invalid-parameter-handler). Wine's handler does not end the process, so the
    import is what shows the guard is compiled in."""
    pe = pefile.PE(str(windows_tree / "python314.dll"))
    imported = {(e.dll.decode().lower(), i.name) for e in pe.DIRECTORY_ENTRY_IMPORT for i in e.imports}
    assert ("api-ms-win-crt-runtime-l1-1-0.dll", b"_set_thread_local_invalid_parameter_handler") in imported


def test_openssl_reads_its_configuration_where_only_an_administrator_writes(windows_tree):
    """OpenSSL loads openssl.cnf (which can load code) from OPENSSLDIR at start-up. A
    Unix path such as /etc/ssl means C:\\etc\\ssl on Windows, a folder any user may
    create; the target's folders are below Program Files (targets/*.yaml recipe_env)."""
    image = (windows_tree / "python314.dll").read_bytes()
    folders = {k: WINDOWS.recipe_env[k].encode() for k in ("OPENSSL_DIR", "OPENSSL_MODULES_DIR")}
    assert all(v.startswith(b"C:/Program Files/") for v in folders.values()), folders
    assert b'OPENSSLDIR: "' + folders["OPENSSL_DIR"] + b'"' in image
    assert b'MODULESDIR: "' + folders["OPENSSL_MODULES_DIR"] + b'"' in image
    assert b"/etc/ssl" not in image


def _source_epoch() -> int:
    """PE timestamps are the source's date (SOURCE_DATE_EPOCH), as every build output's."""
    return newest_mtime(default_workspace().downloads / cpython_source(None).source.file) or 0


def test_build_checks_the_install_under_wine(windows_tree):
    """`pyfreight build` without --no-check runs check-install: the PE rules, then the
    tree's python.exe under Wine from a folder with a space, every check passing (none
    is left to Wine's limits, and nothing is adapted: Wine 10 runs venv's copies); then
    CPython's test subset,
    whose every module runs (the ones Windows has) and passes, but the cases listed
    as Wine's in cpython/test-suite.yaml."""
    proc = pyfreight_cli("build", "--target", WINDOWS.make_name, "--options", "noopt", "--no-dist")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    if "check-install: passed before with the same inputs" in proc.stderr:
        # a pass recorded for these very inputs (an earlier `make windows-x86_64-noopt`):
        # what the checks print comes from check-install itself, which always runs them
        proc = pyfreight_cli("check-install", windows_tree)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout
    assert "running CPython tests (subset) under Wine" in proc.stderr  # progress goes to stderr
    assert re.search(r"^== Tests result: SUCCESS ==$", out, re.M), out[-3000:]
    ran = re.search(r"^Total test files: run=(\d+)/(\d+)", out, re.M)
    assert ran and ran.group(1) == ran.group(2) == str(len(load_test_suite()["subset"])), out[-3000:]
    assert re.search(r"test_ssl passed", out), out[-3000:]
    sockets = r"^PASS  select.select and sockets with a timeout, whatever the handle's value\s+handle \d+$"
    assert re.search(sockets, out, re.M), out[-3000:]
    imported = re.search(r"^PASS  every stdlib module imports\s+(\d+) modules$", out, re.M)
    assert imported and int(imported.group(1)) > 500, out[-3000:]
    for name in ("TLS handshake with certificate verification", "extension modules are built in"):
        assert re.search(rf"^PASS  {re.escape(name)}\s", out, re.M), out[-3000:]
    venv = r"^PASS  venv with pip installing a local wheel\s+pip [\d.]+; pfcheck.exe ran Lib\\site-packages"
    msvc = (
        r"^PASS  an MSVC-built wheel from PyPI loads .*\s+markupsafe\._speedups of markupsafe-3\.0\.4-cp314-"
    )
    assert re.search(msvc, out, re.M), out[-3000:]
    assert re.search(venv, out, re.M), out[-3000:]
    assert re.search(r"^PASS  tkinter creates a Tcl interpreter .*\s+Tcl 8\.6\.\d+ at .*msgcat", out, re.M)
    # the runtime image's Wine says Windows 10, and only a program whose manifest names
    # it is told so (one without is told 6.2)
    resources = (
        r"^PASS  python\.exe and pythonw\.exe carry CPython's manifest, python3XX\.dll its version\s+"
        rf"told Windows 10\.0; version resources say {re.escape(cpython_source(None).version)}$"
    )
    assert re.search(resources, out, re.M), out[-3000:]
    assert re.search(r"^\d+ passed, 0 failed only under Wine, 0 failed$", out, re.M), out[-3000:]


def test_cpythons_whole_test_suite_passes_under_wine_but_for_the_cases_named_with_reasons(windows_tree):
    """`check-install --tests full`: every test file of CPython's suite runs under Wine
    and passes, but for the cases cpython/test-suite.yaml lists as Wine's (ignore_wine)
    or as what our Windows build lacks yet (ignore_os, exclude_os), each with why: no
    failure is left unexplained. About 25 minutes on two cores."""
    # regrtest's header names its folder (test_python_worker_NNæ) in Windows' code page
    proc = pyfreight_cli("check-install", windows_tree, "--tests", "full", timeout=4 * 3600, errors="replace")
    out = proc.stdout
    assert proc.returncode == 0, out[-5000:] + proc.stderr[-3000:]
    assert "running CPython tests (full) under Wine" in proc.stderr
    assert re.search(r"^Result: (FAILURE then )?SUCCESS$", out, re.M), out[-3000:]
    summary = re.search(r"^Total test files: run=(\d+)/(\d+) \(filtered\)(.*)$", out, re.M)
    assert summary, out[-3000:]
    counts = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", summary.group(3))}
    # every file ran: regrtest counts a rerun file twice and one whose resource is denied
    # (network, curses) not at all
    run, total = int(summary.group(1)), int(summary.group(2))
    assert total > 400 and run - counts.get("rerun", 0) + counts.get("resource_denied", 0) == total, summary
    for name in ("test_math", "test_time", "test_platform", "test_ssl"):
        assert re.search(rf"^[\d:]+ \[\s*\d+/\d+(/\d+)?\] {name} passed", out, re.M), (name, out[-3000:])


def test_check_install_fails_a_tree_missing_python3_dll(windows_tree, tmp_path):
    broken = tmp_path / "broken"
    shutil.copytree(windows_tree, broken, symlinks=True)
    (broken / "python3.dll").unlink()
    proc = pyfreight_cli("check-install", broken, "--tests", "none")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    failed = r"^FAIL  ctypes calls a Windows API and the interpreter's own C API\s"
    assert re.search(failed, proc.stdout, re.M), proc.stdout[-3000:]


def test_check_install_fails_a_program_whose_manifest_names_no_windows_after_8(windows_tree, tmp_path):
    """pythonw.exe's manifest with its Windows 8.1 and 10 entries made unknown ones (the
    same length, still valid XML): Windows, and Wine, would tell it it runs on Windows 8
    (6.2), as they told every program of ours before the resources were built. The PE
    rules read the manifest and refuse the tree before Wine runs any of it (check-install
    under Wine also asks the programs which version they are told)."""
    broken = tmp_path / "broken"
    shutil.copytree(windows_tree, broken, symlinks=True)
    pythonw = broken / "pythonw.exe"
    image = pythonw.read_bytes()
    for guid in (b"1f676c76-80e1-4239-95bb-83d0f6d0da78", b"8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a"):
        assert image.count(guid) == 1, guid
        image = image.replace(guid, b"00000000-0000-0000-0000-000000000000")
    pythonw.write_bytes(image)
    proc = pyfreight_cli("check-install", broken, "--tests", "none")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    failed = r"^FAIL  pythonw\.exe: its manifest names no Windows after 8 \(supportedOS\)"
    assert re.search(failed, proc.stdout, re.M), proc.stdout[-3000:]
    assert not re.search(r"^(PASS|WINE) ", proc.stdout, re.M), "it ran the tree under Wine"


def test_wines_own_vc_runtime_is_off_so_a_tree_without_ours_fails(windows_tree, tmp_path):
    """A clean Windows has no vcruntime140.dll: every Wine run turns Wine's built-in copy
    off, so a tree without the one beside python.exe fails check-install's MSVC-built
    wheel as it would fail a user, while the interpreter itself (UCRT only) still runs."""
    broken = tmp_path / "broken"
    shutil.copytree(windows_tree, broken, symlinks=True)
    (broken / "vcruntime140.dll").unlink()
    proc = pyfreight_cli("check-install", broken, "--tests", "none")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    failed = r"^FAIL  an MSVC-built wheel from PyPI loads .*(DLL load failed|ImportError)"
    assert re.search(failed, proc.stdout, re.M), proc.stdout[-3000:]
    assert re.search(r"^PASS  extension modules are built in\s", proc.stdout, re.M), proc.stdout[-3000:]


# A build from nothing on two cores that other work shares: pgo builds twice and trains
# under Wine between (its make took more than an hour beside a CI run and a reproduce).
BUILD_TIMEOUT_S = 4 * 3600


def _make(goal: str, *variables: str, dist: Path) -> tuple[subprocess.CompletedProcess[str], Path]:
    """`make <windows make name>-GOAL VARIABLE=…` as docs/targets.md writes it, its
    archives in `dist`: the finished run and the install tree it names. The test suite's
    output under Wine is passed through as the programs wrote it, which once held a byte
    that is not UTF-8: shown escaped, not a reason to fail the build's test."""
    proc = run_group(
        ["make", f"{WINDOWS.make_name}-{goal}", *variables], cwd=REPO,
        errors="backslashreplace", timeout=BUILD_TIMEOUT_S,
        env={**os.environ, "PYFREIGHT_DIST_DIR": str(dist)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc, Path(re.findall(r"^install tree: (\S+)$", proc.stdout, re.M)[-1])


def test_make_windows_lto_builds_checks_and_writes_archives_of_zigs_bitcode(tmp_path):
    """`make windows-x86_64-lto` (docs/targets.md): CPython's objects compiled to the
    pinned zig's LLVM bitcode and linked with link-time optimization; check-install and
    the test subset pass under Wine; the three archives validate; PYTHON.json names the
    bitcode's LLVM; embed reads that bitcode's symbols with this machine's LLVM of the
    same major (toolchain.LLVM, bookworm-security's llvm-22) and links a single-file
    program from it, twice to the same bytes, which runs alone under Wine."""
    dist = tmp_path / "dist"
    proc, tree = _make("lto", dist=dist)
    if "check-install: passed before with the same inputs" in proc.stderr:
        proc = pyfreight_cli("check-install", tree, "--tests", "none")  # what it prints, from itself
    passed = r"^\d+ passed, 0 failed only under Wine, 0 failed$"
    assert re.search(passed, proc.stdout, re.M), proc.stdout[-3000:]
    archives = {p.name.rsplit("-", 1)[-1]: p for p in dist.iterdir()}
    assert set(archives) == {"full.tar.zst", "install_only.tar.gz", "install_only_stripped.tar.gz"}
    assert all("-windows-gnullvm-lto-" in p.name for p in archives.values())
    for archive in archives.values():
        checked = pyfreight_cli("validate", archive)
        assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    document = json.loads(read_member(archives["full.tar.zst"], "python/PYTHON.json"))
    assert document["build_info"]["object_file_format"] == f"llvm-bitcode:{WINDOWS.toolchain.zig_llvm}"
    assert document["build_options"] == "lto"
    core = document["build_info"]["core"]["objs"][0]
    assert read_member(archives["full.tar.zst"], f"python/{core}")[:4] == b"BC\xc0\xde"
    app = tmp_path / "app" / "hello"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text("import json\ndef main():\n    print(json.dumps({'lto': True}))\n")
    made = []
    for attempt in ("a", "b"):
        alone = tmp_path / f"alone-{attempt}"
        alone.mkdir()
        proc = pyfreight_cli(
            "embed", archives["full.tar.zst"], "-o", alone / "hello.exe", "--memory-importer",
            "--app", app.parent, "--main", "hello:main",
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        made.append((alone / "hello.exe").read_bytes())
    assert made[0] == made[1], "two embeds of the same lto archive differ"
    alone.chmod(0o755)
    result = run_windows_program(WINDOWS, default_workspace(), alone, "hello.exe")
    assert result.stdout.strip() == '{"lto": true}', result.stdout + result.stderr


def test_make_windows_free_threaded_builds_runs_without_the_gil_and_embeds(tmp_path):
    """`make windows-x86_64-noopt FREETHREADED=1` (docs/targets.md): the projects built
    with DisableGil, so python3.14t.exe, python314t.dll, python3t.dll and the t venv
    launchers, with python.exe and pythonw.exe copies at the top where clients start
    it; check-install under Wine finds the GIL off and .cp314t modules; the archives
    validate; a single-file .exe from the full archive runs alone without the GIL."""
    dist = tmp_path / "dist"
    proc, tree = _make("noopt", "FREETHREADED=1", dist=dist)
    top = {p.name for p in tree.iterdir() if p.is_file()}
    assert {"python.exe", "pythonw.exe", "python3.14t.exe", "pythonw3.14t.exe", "python314t.dll"} <= top
    assert "python3t.dll" in top and not {"python314.dll", "python3.dll"} & top
    launchers = {p.name for p in (tree / "Lib" / "venv" / "scripts" / "nt").glob("*.exe")}
    assert launchers == {"venvlaunchert.exe", "venvwlaunchert.exe"}
    if "check-install: passed before with the same inputs" in proc.stderr:
        proc = pyfreight_cli("check-install", tree, "--tests", "none")  # what it prints, from itself
    free = r"^PASS  a free-threaded build runs without the GIL.*\s+GIL disabled, \.cp314t-win_amd64\.pyd$"
    assert re.search(free, proc.stdout, re.M), proc.stdout[-3000:]
    assert re.search(r"^\d+ passed, 0 failed only under Wine, 0 failed$", proc.stdout, re.M), proc.stdout[
        -3000:
    ]
    archives = {p.name.rsplit("-", 1)[-1]: p for p in dist.iterdir()}
    assert all("-windows-gnullvm-freethreaded+noopt-" in p.name for p in archives.values()), archives
    for archive in archives.values():
        checked = pyfreight_cli("validate", archive)
        assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    app = tmp_path / "app" / "hello"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text(
        "import json, sys\ndef main():\n    print(json.dumps(sys._is_gil_enabled()))\n"
    )
    alone = tmp_path / "alone"
    alone.mkdir()
    proc = pyfreight_cli(
        "embed", archives["full.tar.zst"], "-o", alone / "hello.exe", "--memory-importer",
        "--app", app.parent, "--main", "hello:main",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    alone.chmod(0o755)
    result = run_windows_program(WINDOWS, default_workspace(), alone, "hello.exe")
    assert result.stdout.strip() == "false", result.stdout + result.stderr


def test_make_windows_builds_cpython_3_15_checked_under_wine(tmp_path):
    """`make windows-x86_64-noopt CPYTHON=3.15` (docs/targets.md): 3.15's own projects
    (python3t.dll from its python3tdll project beside python3.dll, _remote_debugging
    linking ntdll), our patches ported to it; check-install and the test subset pass
    under Wine; the archives validate."""
    dist = tmp_path / "dist"
    proc, tree = _make("noopt", "CPYTHON=3.15", dist=dist)
    assert {"python315.dll", "python3.dll", "python3t.dll"} <= {p.name for p in tree.iterdir()}
    if "check-install: passed before with the same inputs" in proc.stderr:
        proc = pyfreight_cli("check-install", tree)  # what it prints, from itself
    assert re.search(r"^== Tests result: SUCCESS ==$", proc.stdout, re.M), proc.stdout[-3000:]
    assert re.search(r"^\d+ passed, 0 failed only under Wine, 0 failed$", proc.stdout, re.M), proc.stdout[
        -3000:
    ]
    archives = sorted(dist.iterdir())
    assert len(archives) == 3 and all(p.name.startswith("cpython-3.15.") for p in archives), archives
    checked = pyfreight_cli("validate", *archives)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]


def test_make_windows_builds_cpython_3_13_free_threaded_with_lto_checked_under_wine(tmp_path):
    """`make windows-x86_64-lto CPYTHON=3.13 FREETHREADED=1`, the 3.13 build of the
    release matrix that asks most of its projects: pyconfig.h written from
    PC/pyconfig.h.in with Py_GIL_DISABLED (the tree's include/pyconfig.h says so), the
    3.14 patches and 3.13's own; check-install and the test subset pass under Wine
    (pip's scripts and the cp313t MSVC wheel among the checks); the archives validate."""
    dist = tmp_path / "dist"
    proc, tree = _make("lto", "CPYTHON=3.13", "FREETHREADED=1", dist=dist)
    assert {"python313t.dll", "python3.13t.exe", "python.exe"} <= {p.name for p in tree.iterdir()}
    assert "\n#define Py_GIL_DISABLED 1\n" in (tree / "include" / "pyconfig.h").read_text()
    if "check-install: passed before with the same inputs" in proc.stderr:
        proc = pyfreight_cli("check-install", tree)  # what it prints, from itself
    assert re.search(r"^== Tests result: SUCCESS ==$", proc.stdout, re.M), proc.stdout[-3000:]
    passed = re.search(r"^(\d+) passed, 0 failed only under Wine, 0 failed$", proc.stdout, re.M)
    assert passed and "markupsafe-3.0.3-cp313-cp313t-win_amd64.whl" in proc.stdout, proc.stdout[-3000:]
    archives = sorted(dist.iterdir())
    assert len(archives) == 3 and all(p.name.startswith("cpython-3.13.") for p in archives), archives
    checked = pyfreight_cli("validate", *archives)
    assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]


def test_make_windows_pgo_trains_under_wine_and_reproduces_from_its_profile(tmp_path):
    """`make windows-x86_64-pgo` (docs/targets.md): the instrumented interpreter, linking
    LLVM's profile runtime built from its pinned source, trained by `python -m test --pgo`
    under Wine, its merged profile compiled in with full LTO; check-install passes; the
    three archives validate; the full archive keeps the profile, names no profile runtime
    (it was linked into the trained interpreter only), and `reproduce` makes its bytes
    again from that profile without training."""
    dist = tmp_path / "dist"
    proc, tree = _make("pgo", dist=dist)
    if "check-install: passed before with the same inputs" in proc.stderr:
        proc = pyfreight_cli("check-install", tree, "--tests", "none")
    assert re.search(r"^\d+ passed, 0 failed only under Wine, 0 failed$", proc.stdout, re.M), proc.stdout[
        -3000:
    ]
    archives = {p.name.rsplit("-", 1)[-1]: p for p in dist.iterdir()}
    assert set(archives) == {"full.tar.zst", "install_only.tar.gz", "install_only_stripped.tar.gz"}
    # The default build's install_only archives name no option, as python-build-standalone's.
    named = (
        r"cpython-3\.14\.\d+\+\d{8}-x86_64-pc-windows-gnullvm-"
        r"(pgo\+lto-full\.tar\.zst|install_only(_stripped)?\.tar\.gz)"
    )
    assert all(re.fullmatch(named, p.name) for p in archives.values()), archives
    for archive in archives.values():
        checked = pyfreight_cli("validate", archive)
        assert checked.returncode == 0, checked.stdout[-2000:] + checked.stderr[-2000:]
    full = archives["full.tar.zst"]
    document = json.loads(read_member(full, "python/PYTHON.json"))
    assert document["build_options"] == "pgo+lto"
    # llvm-profdata's indexed profile: its magic, 0x8169666f72706cff little-endian
    assert read_member(full, "python/build/pgo.profdata")[:8] == (0x8169666F72706CFF).to_bytes(8, "little")
    names = member_names(full)
    assert not [n for n in names if "clang_rt" in n or "llvm-profile-runtime" in n]
    assert "llvm-profile-runtime" not in read_member(full, "python/licenses/sbom.cdx.json").decode()
    reproduced = pyfreight_cli("reproduce", full, timeout=BUILD_TIMEOUT_S)
    assert reproduced.returncode == 0, reproduced.stdout[-3000:] + reproduced.stderr[-3000:]
    assert "identical" in reproduced.stdout, reproduced.stdout[-2000:]


def test_bench_measures_windows_builds_side_by_side_under_wine():
    """`pyfreight bench --target windows-x86_64 --options pgo+lto,lto` (docs/performance.md):
    pyperf's benchmarks run by each build's python.exe under Wine, one table and JSON."""
    proc = pyfreight_cli(
        "bench", "--target", WINDOWS.make_name, "--options", "pgo+lto,lto", "--only", "nbody,json_loads"
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    saved = re.search(r"^saved: (\S+\.json)", proc.stdout, re.M)
    assert saved is not None, proc.stdout[-2000:]
    report = json.loads(Path(saved.group(1)).read_text())
    assert report["target"] == WINDOWS.triple and report["runner"] == "wine"
    assert report["interpreters"] == ["pgo+lto", "lto"]
    assert set(report["results"]) == {"nbody", "json_loads"}
    for row in report["results"].values():
        assert set(row) == {"pgo+lto", "lto"} and all(0 < t < 60 for t in row.values())
    assert "lto/pgo+lto" in proc.stdout


SQLITE_HALF_EXTENSION = r"""
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1
static void half(sqlite3_context *c, int n, sqlite3_value **v) {
    (void)n;
    sqlite3_result_double(c, sqlite3_value_double(v[0]) / 2.0);
}
__declspec(dllexport) int sqlite3_half_init(sqlite3 *db, char **e, const sqlite3_api_routines *api) {
    (void)e;
    SQLITE_EXTENSION_INIT2(api);
    return sqlite3_create_function(db, "half", 1, SQLITE_UTF8, 0, half, 0, 0);
}
"""


def test_an_sqlite_extension_dll_loads_under_wine_once_enabled(windows_tree, tmp_path):
    """sqlite3's loadable extensions on Windows (CPython's _sqlite3 project defines
    PY_SQLITE_ENABLE_LOAD_EXTENSION, which our build reads): a DLL linked by the target's
    compiler in the build image, against our SQLite's sqlite3ext.h, is refused until
    enable_load_extension(True) and then gives half(5) = 2.5, under Wine with its own VC
    runtime off."""
    out = tmp_path / "extension"
    [artifact] = default_workspace().build.glob(f"sqlite-*-{WINDOWS.triple}.tar")
    extract(artifact, out)
    (out / "half.c").write_text(SQLITE_HALF_EXTENSION)
    out.chmod(0o777)  # the build image's unprivileged builder writes the DLL here
    env = toolchain.build_environment(WINDOWS, jobs=1, source_date_epoch=0)
    run(
        RunSpec(
            image=ensure_images(default_workspace(), WINDOWS).tag,
            command=["bash", "-euc", "$CC -shared -O2 -I/out/include /out/half.c -o /out/half.dll"],
            what="building an SQLite extension",
            mounts=[Mount(out, "/out", read_only=False)],
            env=env,
            user="1000:1000",
        )
    )
    folder = tmp_path / "run"
    shutil.copytree(windows_tree, folder / "python", symlinks=True)
    shutil.copy(out / "half.dll", folder / "half.dll")
    (folder / "load.py").write_text(
        "import sqlite3\n"
        "db = sqlite3.connect(':memory:')\n"
        "try:\n"
        "    db.load_extension('half')\n"
        "except sqlite3.OperationalError as e:\n"
        "    print('refused:', e)\n"
        "db.enable_load_extension(True)\n"
        "db.load_extension('half')\n"
        "print('half(5) =', db.execute('select half(5)').fetchone()[0])\n"
    )
    ran = run_windows_program(
        WINDOWS, default_workspace(), folder, "python/python.exe", ["load.py"], check=False
    )
    assert ran.ok, ran.stdout[-2000:] + ran.stderr[-2000:]
    assert ran.stdout.splitlines() == ["refused: not authorized", "half(5) = 2.5"], ran.stdout
