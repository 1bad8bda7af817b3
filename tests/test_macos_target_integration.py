"""The macOS targets, built here as a user builds them: `make macos-aarch64-noopt` (and
x86_64's) cross-builds the dependencies and CPython with the pinned zig in the build
image with no network, checks the tree's Mach-O files (its programs cannot run here)
and writes the three archives. Then what can be proved of them without a Mac:
PYTHON.json for packers, `pyfreight validate` passing them and failing, one line each,
archives whose Mach-O files were made to break a rule, and `pyfreight reproduce`
rebuilding the full archive from scratch to the same bytes. What only a Mac shows runs
in .github/workflows/macos.yml."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
import zstandard

from pyfreight.formats.macho import macho_facts
from pyfreight.formats.tarball import read_member
from pyfreight.targets import Target, all_targets
from pyfreight.verify.macho_rules import macho_problems
from tests.conftest import pyfreight_cli, run_group

REPO = Path(__file__).resolve().parent.parent
MACOS = [t for t in all_targets().values() if t.binary_format == "macho"]
pytestmark = pytest.mark.container


def _each(*more_marks: pytest.MarkDecorator) -> list:
    return [pytest.param(t, marks=[pytest.mark.part(t.triple), *more_marks], id=t.triple) for t in MACOS]


def _make(dist: Path, *make_args: str) -> subprocess.CompletedProcess[str]:
    """`make ARGS` as a user types it, archives into `dist`; it must succeed."""
    proc = run_group(
        ["make", *make_args], cwd=REPO, timeout=7200, env={**os.environ, "PYFREIGHT_DIST_DIR": str(dist)}
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return proc


def _validated_full_archive(dist: Path) -> tuple[Path, dict]:
    """The one full archive `dist` holds, once `pyfreight validate` passes it, and its
    PYTHON.json."""
    (full,) = dist.glob("cpython-*-full.tar.zst")
    checked = pyfreight_cli("validate", full)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    return full, json.loads(read_member(full, "python/PYTHON.json"))


@pytest.fixture(scope="module")
def built(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`make <target>-noopt` as the README says, into a dist folder of its own; the
    three archives by flavour."""
    target: Target = request.param
    dist = tmp_path_factory.mktemp(f"dist-{target.make_name}")
    proc = _make(dist, f"{target.make_name}-noopt")
    # what the build said of the tree, in place of running it
    assert f"check-install: {target.triple}'s programs cannot run on this machine" in proc.stderr
    assert re.search(rf"Mach-O files: \d+, 0 problem\(s\) for {target.triple}", proc.stderr), proc.stderr[
        -2000:
    ]
    archives = {}
    for path in dist.glob("cpython-*"):
        flavour = re.search(r"-(full|install_only_stripped|install_only)\.tar\.", path.name)
        assert flavour is not None, path.name
        archives[flavour[1]] = path
    assert sorted(archives) == ["full", "install_only", "install_only_stripped"]
    return archives


def _members(archive: Path) -> dict[str, bytes]:
    """Every regular file of an archive (zstd or gzip), by name."""
    raw = archive.read_bytes()
    if archive.name.endswith(".zst"):
        raw = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isreg()}  # type: ignore[union-attr]


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_the_archives_validate_and_say_what_packers_need(built):
    for archive in built.values():
        proc = pyfreight_cli("validate", archive)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    document = json.loads(read_member(built["full"], "python/PYTHON.json"))
    target = all_targets()[document["target_triple"]]
    assert target.binary_format == "macho"
    assert document["build_info"]["object_file_format"] == "mach-o"
    assert document["crt_features"] == ["libsystem-dynamic"]
    assert document["python_platform_tag"] == target.python_platform_tag
    assert document["python_suffixes"]["extension"][0] == ".cpython-314-darwin.so"
    scproxy = document["build_info"]["extensions"]["_scproxy"][0]
    assert {"name": "SystemConfiguration", "framework": True} in scproxy["links"]
    assert "_tkinter" not in document["build_info"]["extensions"]


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_the_interpreter_is_a_mach_o_program_of_the_target(built, tmp_path):
    members = _members(built["install_only"])
    executable = next(name for name in members if re.fullmatch(r"python/bin/python3\.\d+", name))
    path = tmp_path / "python3"
    path.write_bytes(members[executable])
    facts = macho_facts(path, tmp_path)
    assert facts is not None and facts.filetype == "execute"
    target = next(t for t in MACOS if t.macho.cpu == facts.cpu)
    assert facts.minimum_os == target.macho.minimum_os
    assert {name for name, _ in facts.dylibs} <= target.libc.needed
    assert (facts.signature is not None) == target.macho.code_signature_required
    assert {"Py_Initialize", "PyList_New"} <= facts.exported


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_the_tree_ships_libpython_as_a_dylib_found_by_rpath(built, tmp_path):
    """libpython3.14.dylib for programs that embed Python (PyInstaller, python3-config
    --embed): loaded by @rpath/, exporting the C API and nothing of OpenSSL or SQLite,
    with its modules' libraries linked in (nothing left to dyld's lookup at run time)."""
    members = _members(built["install_only"])
    library = members["python/lib/libpython3.14.dylib"]
    path = tmp_path / "libpython3.14.dylib"
    path.write_bytes(library)
    facts = macho_facts(path, tmp_path)
    assert facts is not None and facts.filetype == "dylib"
    assert facts.install_name == "@rpath/libpython3.14.dylib"
    target = next(t for t in MACOS if t.macho.cpu == facts.cpu)
    assert {name for name, _ in facts.dylibs} <= target.libc.needed
    assert {"Py_Initialize", "PyList_New", "PyInit__ssl", "PyInit__sqlite3"} <= facts.exported
    assert not {"SSL_new", "sqlite3_open", "deflate"} & facts.exported
    assert "python/bin/python3.14" in members  # the interpreter stays one static program
    executable = tmp_path / "python3.14"
    executable.write_bytes(members["python/bin/python3.14"])
    program = macho_facts(executable, tmp_path)
    assert program is not None and "@rpath/libpython3.14.dylib" not in {n for n, _ in program.dylibs}
    document = json.loads(read_member(built["full"], "python/PYTHON.json"))
    assert document["build_info"]["core"]["shared_lib"] == "install/lib/libpython3.14.dylib"
    sysconfig_data = next(v for k, v in members.items() if re.search(r"/_sysconfigdata_.*\.py$", k))
    assert b"'Py_ENABLE_SHARED': 1," in sysconfig_data
    assert b"'LDLIBRARY': 'libpython3.14.dylib'," in sysconfig_data


def _broken_copy(archive: Path, out: Path, member: str, change) -> Path:
    """`archive` (install_only, gzip) with `member`'s bytes changed, packed again."""
    with tarfile.open(archive) as src, tarfile.open(out, "w:gz") as dst:
        for info in src.getmembers():
            data = src.extractfile(info).read() if info.isreg() else None  # type: ignore[union-attr]
            if info.name == member and data is not None:
                data = change(data)
                info.size = len(data)
            dst.addfile(info, io.BytesIO(data) if data is not None else None)
    return out


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_validate_fails_an_archive_whose_mach_o_file_breaks_a_rule_in_one_line(built, tmp_path):
    archive = built["install_only"]
    members = _members(archive)
    executable = next(name for name in members if re.fullmatch(r"python/bin/python3\.\d+", name))
    target = next(t for t in MACOS if f"-{t.triple}-" in archive.name)

    def newer_minimum(data: bytes) -> bytes:
        # LC_BUILD_VERSION (0x32): its minos, the third word, says macOS 99.0
        at = data.index(b"\x32\x00\x00\x00")
        return data[: at + 12] + (99 << 16).to_bytes(4, "little") + data[at + 16 :]

    broken = _broken_copy(archive, tmp_path / "newer.tar.gz", executable, newer_minimum)
    proc = pyfreight_cli("validate", broken)
    assert proc.returncode != 0
    failures = [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]
    expected = f"asks for macOS 99.0, newer than the target's {target.macho.minimum_os_text}"
    assert any(executable in line and expected in line for line in failures), proc.stdout
    if target.macho.code_signature_required:  # the byte changed after signing: the hashes say so
        assert any("code signature is invalid" in line for line in failures), proc.stdout
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_reproduce_rebuilds_the_full_archive_from_scratch_to_the_same_bytes(built):
    proc = pyfreight_cli("reproduce", built["full"], timeout=7200)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "reproduced, byte for byte identical" in proc.stdout


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_embed_links_a_macos_interpreter_from_the_full_archive_with_the_pinned_zig(built, tmp_path):
    """`pyfreight embed` on this Linux machine, with the target's pinned zig: a Mach-O
    program that keeps to the target's rules and exports the C API (it runs on a Mac)."""
    out = tmp_path / "python3.14"
    proc = pyfreight_cli("embed", built["full"], "-o", out)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    target = next(t for t in MACOS if f"-{t.triple}-" in built["full"].name)
    facts = macho_facts(out, tmp_path)
    assert facts is not None and facts.filetype == "execute" and facts.cpu == target.macho.cpu
    assert macho_problems(facts, target, frozenset()) == []  # bin-less name: C API checked below
    assert {"Py_Initialize", "PyList_New", "PyModule_Create2", "PyArg_ParseTuple"} <= facts.exported
    frameworks = {name.split("/")[-1] for name, _ in facts.dylibs if "/Frameworks/" in name}
    assert frameworks == {"CoreFoundation", "SystemConfiguration"}  # _scproxy's


@pytest.mark.parametrize("built", _each(), indirect=True)
def test_uv_lists_the_release_entry_of_the_macos_build(built, tmp_path):
    """`pyfreight release` indexes the macOS archives for uv (macos-ARCH-none), and uv
    (the pinned client from PyPI) reads that entry as a download for a Mac."""
    out = tmp_path / "release"
    made = pyfreight_cli("release", built["full"], "--base-url", f"file://{out}", "-o", out)
    assert made.returncode == 0, made.stdout + made.stderr
    target = next(t for t in MACOS if f"-{t.triple}-" in built["full"].name)
    os_name, arch, libc = target.uv_platform.os, target.uv_platform.arch, target.uv_platform.libc
    uv = str(REPO / ".venv" / "bin" / "uv")
    listed = subprocess.run(
        [uv, "python", "list", "--all-platforms", "--all-arches", "--only-downloads",
         "--python-downloads-json-url", str(out / "downloads.json")],
        capture_output=True,
        text=True,
        env={**os.environ, "UV_NO_CONFIG": "1", "UV_OFFLINE": "1"},
    )  # fmt: skip
    assert listed.returncode == 0, listed.stderr
    assert f"-{os_name}-{arch}-{libc}" in listed.stdout and "macos" in listed.stdout, listed.stdout


@pytest.mark.parametrize("target", _each())
def test_cpython_3_15_builds_for_macos_and_validates(target, tmp_path):
    """The pinned 3.15 release too, as the README's `CPYTHON=3.15` asks: its configure
    finds dup3 and pipe2 in zig's libSystem stub unless the target file answers "no"
    (macOS has them only from 27.0), and the build would stop on an unguarded call."""
    _make(tmp_path, f"{target.make_name}-noopt", "CPYTHON=3.15")
    full, document = _validated_full_archive(tmp_path)
    assert full.name.startswith("cpython-3.15.")
    assert document["python_suffixes"]["extension"][0] == ".cpython-315-darwin.so"
    assert document["build_info"]["object_file_format"] == "mach-o"


@pytest.mark.parametrize("target", _each())
@pytest.mark.parametrize(
    ("make_args", "abi_tag"),
    [(["{make}-noopt", "FREETHREADED=1"], "t"), (["{make}-debug"], "d")],
    ids=["ft", "debug"],
)
def test_free_threaded_and_debug_builds_for_macos_validate(target, make_args, abi_tag, tmp_path):
    """The other variants a target builds: a free-threaded tree (python3.14t) and a debug
    one (python3.14d), which zig's cc, not optimizing, would build with UBSan and link its
    runtime into. PYTHON.json, told by the GIL release build python, says the tree's ABI
    flags and paths; the interpreter is one file, whatever its names."""
    _make(tmp_path, *(arg.format(make=target.make_name) for arg in make_args))
    full, document = _validated_full_archive(tmp_path)
    assert document["python_abi_tag"] == abi_tag
    assert document["python_paths"]["include"] == f"install/include/python3.14{abi_tag}"
    assert document["python_suffixes"]["extension"][0] == f".cpython-314{abi_tag}-darwin.so"
    members = _members(full)
    interpreters = [name for name in members if re.fullmatch(r"python/install/bin/python3\.\d+\w?", name)]
    assert interpreters == [f"python/install/bin/python3.14{abi_tag}"]  # python3.14 is a symlink
    assert b"__ubsan_handle" not in members[interpreters[0]]
