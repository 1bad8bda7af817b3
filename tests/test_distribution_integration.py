"""The distribution archives of a real CPython 3.14 noopt build: layout, PYTHON.json
against its schema and the archive's own members, validate and test-dist on them,
and the same bytes when everything is rebuilt from scratch."""

from __future__ import annotations

import struct
import subprocess
import tarfile
from pathlib import Path

import pytest

from pyfreight.cpython.naming import folder_stem
from pyfreight.cpython.spec import BuildSpec
from pyfreight.formats.tarball import extract
from pyfreight.formats.tarball import members as archive_members
from pyfreight.platforms import platform_of
from pyfreight.python_json import schema_errors
from tests.conftest import linked_build_folder, pyfreight_cli
from tests.tiers import FROM_SCRATCH

pytestmark = pytest.mark.container


@pytest.fixture(scope="module")
def dist(noopt_dist):
    return noopt_dist


@pytest.fixture(scope="module")
def install_only_tree(dist, tmp_path_factory) -> Path:
    """The install_only archive extracted once, for the tests that run or read its files
    and change none."""
    root = tmp_path_factory.mktemp("install-only")
    extract(dist.install_only, root)
    return root / "python"


def _paths_in(value, key=""):
    """Every string of PYTHON.json that names a file or folder of the archive."""
    path_keys = ("python_exe", "objs", "path_static", "license_paths", "license_path", "inittab_object",
                 "inittab_source", "static_lib", "shared_lib", "run_tests", "python_stdlib_platform_config",
                 "tcl_library_path", "python_paths")  # fmt: skip
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths_in(v, k if k in path_keys else key)
    elif isinstance(value, list):
        for v in value:
            yield from _paths_in(v, key)
    elif isinstance(value, str) and key:
        yield value


@pytest.mark.archive_reader
def test_full_archive_layout_and_python_json(dist):
    members = archive_members(dist.full)
    names = [m.name for m in members]
    assert names[0] == "python/PYTHON.json"
    assert names[1:] == sorted(names[1:])
    assert {n.split("/")[1] for n in names if n.count("/") >= 1} == {
        "PYTHON.json",
        "install",
        "build",
        "licenses",
    }
    assert all(m.uid == 0 and m.gid == 0 and m.uname == "" for m in members)
    assert len({m.mtime for m in members}) == 1
    document = dist.python_json
    assert schema_errors(document) == []
    missing = sorted({p for p in _paths_in(document) if f"python/{p}" not in set(names)})
    assert missing == []
    assert document["python_exe"] == "install/bin/python3.14"
    assert document["build_info"]["object_file_format"] == "elf"
    # The interpreter links its objects; libpython.so beside it is for embedding programs.
    core = document["build_info"]["core"]
    assert document["libpython_link_mode"] == "static"
    assert core["shared_lib"] == "install/lib/libpython3.14.so.1.0"
    assert core["static_lib"] == "install/lib/python3.14/config-3.14-x86_64-linux-gnu/libpython3.14.a"
    extensions = document["build_info"]["extensions"]
    assert extensions["_ssl"][0]["links"][0] == {"name": "ssl", "path_static": "build/lib/libssl.a"}
    assert extensions["_ssl"][0]["licenses"] == ["Apache-2.0"]
    assert extensions["sys"][0] == {"in_core": True, "init_fn": "NULL", "links": [], "objs": [],
                                    "required": True, "variant": "default"}  # fmt: skip
    assert extensions["_io"][0]["required"] and not extensions["_sqlite3"][0]["required"]
    # every shipped library a module links comes with its license
    for name, (variant,) in extensions.items():
        if any(
            "path_static" in link and link["path_static"].startswith("build/lib/")
            for link in variant["links"]
        ):
            assert variant.get("license_paths"), name


@pytest.mark.archive_reader
def test_install_only_archives(dist):
    with tarfile.open(dist.install_only) as tar:
        names = tar.getnames()
    assert "python/bin/python3.14" in names and "python/lib/python3.14/os.py" in names
    assert not [n for n in names if n.endswith(".a") or "PYTHON.json" in n]
    with tarfile.open(dist.install_only_stripped) as tar:
        stripped = tar.getnames()
    assert "python/lib/python3.14/test/__init__.py" in names
    assert not [n for n in stripped if n.startswith("python/lib/python3.14/test/")]
    assert dist.install_only_stripped.stat().st_size < dist.install_only.stat().st_size


@pytest.mark.archive_reader
def test_archives_validate(dist):
    proc = pyfreight_cli("validate", *dist.archives)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count(": passed") == 3 and "FAIL" not in proc.stdout


def _give_an_executable_stack(elf: Path) -> None:
    """Marks the PT_GNU_STACK header of a 64-bit little-endian ELF executable (as llvm-bolt's
    -use-gnu-stack leaves no such header, the stack is executable either way)."""
    data = bytearray(elf.read_bytes())
    (phoff,) = struct.unpack_from("<Q", data, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
    for i in range(phnum):
        at = phoff + i * phentsize
        p_type, p_flags = struct.unpack_from("<II", data, at)
        if p_type == 0x6474E551:  # PT_GNU_STACK
            struct.pack_into("<I", data, at + 4, p_flags | 1)  # PF_X
            break
    else:
        raise AssertionError(f"{elf} has no PT_GNU_STACK")
    new = elf.with_name(elf.name + ".new")
    new.write_bytes(bytes(data))
    new.chmod(0o755)
    new.replace(elf)  # a new file: the build folder's hard link to the old one is left alone


def test_dist_refuses_to_write_an_archive_that_fails_validate(dist, tmp_path):
    """`pyfreight dist` judges the tree by validate's rules before it packs anything (and
    every archive under its temporary name): given the same build with an executable
    stack, it writes no archive at all, compresses nothing, and says which check failed
    and where its log is, in one line."""
    spec = BuildSpec.resolve("3.14", "noopt", None)
    build = linked_build_folder(tmp_path / "build")  # the same build: only the dist step runs
    tree = build / folder_stem(spec)
    _give_an_executable_stack(tree / platform_of(spec.target).layout.interpreter(tree))
    out = tmp_path / "dist"
    proc = pyfreight_cli(
        "dist",
        "--python",
        "3.14",
        "--options",
        "noopt",
        PYFREIGHT_BUILD_DIR=str(build),
        PYFREIGHT_DIST_DIR=str(out),
    )
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    [error] = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert "fails validate, so it was not written" in error and "executable stack" in error, error
    assert "Traceback" not in proc.stderr
    assert not out.exists() or not list(out.iterdir()), sorted(p.name for p in out.iterdir())
    assert "dist: writing" not in proc.stdout + proc.stderr, proc.stderr[-2000:]
    log = Path(error.rsplit("(log: ", 1)[1].rstrip(")"))
    assert log.parent == build / "logs" and "executable stack" in log.read_text()


def test_full_and_install_only_archives_run(dist):
    proc = pyfreight_cli("test-dist", dist.full, dist.install_only, "--tests", "none")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "PASS  run_tests entry of PYTHON.json" in proc.stdout and "FAIL" not in proc.stdout
    assert "(full)" in proc.stderr and "(install_only)" in proc.stderr  # recognised from content


@pytest.mark.archive_reader
@pytest.mark.parametrize(
    ("argv0", "path"),
    [
        ("/dev/null", "/usr/bin:/bin"),  # a launcher that names the process freely
        ("python3", "/usr/bin:/bin"),  # a bare name that PATH resolves to another Python (Debian's)
        ("nosuch-python", "/nonexistent"),  # a bare name that PATH does not resolve at all
    ],
)
def test_a_start_whose_argv0_does_not_lead_to_the_interpreter_finds_its_stdlib(
    install_only_tree, tmp_path, argv0, path
):
    """`exec -a NAME python/bin/python3` from an extracted install_only archive: the
    stdlib is found from the file the kernel started, and sys.executable names that file."""
    python = install_only_tree / "bin" / "python3"
    probe = "import encodings, os, sys; print(sys.executable); print(os.path.realpath(sys.prefix))"
    ran = subprocess.run(
        ["/bin/bash", "-c", f'exec -a "$1" "$0" -c "{probe}"', str(python), argv0],
        capture_output=True,
        text=True,
        env={"PATH": path},
        cwd=tmp_path,
    )
    assert ran.returncode == 0, ran.stderr
    executable, prefix = ran.stdout.split()
    assert Path(executable).resolve() == python.resolve()
    assert prefix == str(install_only_tree.resolve())


@pytest.mark.archive_reader
def test_stripped_archive_runs_with_the_default_tests(dist):
    """The stripped flavour has no test package: test-dist still runs every product
    check on it (the TLS handshake included, with pyfreight's own test CA) and says
    that CPython's tests are skipped, instead of failing on the missing package."""
    proc = pyfreight_cli("test-dist", dist.install_only_stripped)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "install_only_stripped has no test package; CPython's tests are skipped" in proc.stderr
    assert "PASS  TLS handshake with certificate verification" in proc.stdout
    assert "FAIL" not in proc.stdout


@pytest.mark.part(FROM_SCRATCH)
def test_noopt_archive_is_reproduced_from_scratch(dist):
    """Everything rebuilt in a fresh build folder from the downloads alone gives the
    same bytes: `pyfreight reproduce ARCHIVE`."""
    proc = pyfreight_cli("reproduce", dist.full)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "byte for byte identical" in proc.stdout


def _framed_functions(binary: Path) -> dict[str, bool]:
    """For each function of `binary`, by its symbol: whether it sets up a frame pointer
    (`push %rbp` then `mov %rsp,%rbp`) anywhere, since clang may shrink-wrap the
    prologue past an early return (zlib's deflate checks its arguments first)."""
    from pyfreight.toolchain import LLVM

    listing = subprocess.run(
        [f"llvm-objdump-{LLVM}", "-d", "--no-show-raw-insn", str(binary)],
        capture_output=True, text=True, check=True, timeout=600,
    ).stdout  # fmt: skip
    framed: dict[str, bool] = {}
    current, previous = None, ""
    for line in listing.splitlines():
        if line.endswith(">:") and " <" in line:
            current, previous = line.split(" <", 1)[1][:-2], ""
            framed.setdefault(current, False)
        elif current is not None and "\t" in line and ":" in line.split("\t", 1)[0]:
            instruction = " ".join(part.strip() for part in line.split("\t")[1:]).strip()
            if previous == "pushq %rbp" and instruction == "movq %rsp, %rbp":
                framed[current] = True
            previous = instruction
    return framed


@pytest.mark.archive_reader
def test_the_interpreter_keeps_frame_pointers_for_profilers(install_only_tree):
    """Every Linux build keeps frame pointers (platforms/linux.py frame_pointer_cflags), in
    CPython's code and its libraries', so perf and eBPF profilers unwind our interpreter
    without DWARF; a library whose recipe.yaml says `frame_pointers: false` (where the
    C-library bench measured their cost) has none. Read from the machine code of the
    shipped executable (a clang 19 build without them had 0.2% of its functions setting
    up %rbp)."""
    from pyfreight.sources.recipes import load_all

    framed = _framed_functions(install_only_tree / "bin" / "python3.14")
    assert framed["PyObject_GetAttr"]
    recipes = load_all()
    by_library = {
        "openssl": "SSL_new", "xz": "lzma_code", "zlib": "deflate", "tcl": "Tcl_CreateInterp",
        "libx11": "XOpenDisplay", "sqlite": "sqlite3_prepare_v2", "zstd": "ZSTD_decompressDCtx",
        "bzip2": "BZ2_bzDecompress", "expat": "XML_Parse", "mpdecimal": "mpd_qmul",
    }  # fmt: skip
    for recipe, function in by_library.items():
        assert framed[function] is recipes[recipe].frame_pointers, (recipe, function)
    share = sum(framed.values()) / len(framed)
    # what is left: those libraries, OpenSSL's hand-written assembly, tail-call thunks,
    # the smallest leaves
    assert share > 0.8, f"{share:.1%} of {len(framed)} functions set up a frame pointer"
