"""Archives come from the internet: a corpus of hostile and malformed archives, made
here, handed to every command that opens one, as people type them (the `pyfreight`
console script). Each must be refused with one line naming the member (or the file)
and the rule, exit non-zero, print no traceback, and write nothing outside the
command's own work folders."""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
import zstandard

from pyfreight.archives.flavours import FULL, INSTALL_ONLY, INSTALL_ONLY_STRIPPED
from pyfreight.cpython.spec import BuildSpec

PYFREIGHT = Path(sys.executable).with_name("pyfreight")
SPEC = BuildSpec.resolve(None, "noopt", None)  # reproduce and release read the build from the name
FULL_NAME = FULL.file_name(SPEC, "20260805")


def _tar_bytes(build: Callable[[tarfile.TarFile], None], fmt: int = tarfile.GNU_FORMAT) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=fmt, encoding="utf-8", errors="surrogateescape") as tar:
        build(tar)
    return buf.getvalue()


def _file(tar: tarfile.TarFile, name: str, data: bytes = b"x", mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _special(tar: tarfile.TarFile, name: str, kind: bytes, link: str = "") -> None:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    tar.addfile(info)


def _write(path: Path, raw: bytes) -> Path:
    """As .tar.zst or .tar.gz by the name, plain otherwise."""
    if path.name.endswith(".zst"):
        raw = zstandard.ZstdCompressor().compress(raw)
    elif path.name.endswith(".gz"):
        raw = gzip.compress(raw, mtime=0)
    path.write_bytes(raw)
    return path


def _huge_member(tar: tarfile.TarFile) -> None:
    _file(tar, "python/PYTHON.json", b"{}")
    info = tarfile.TarInfo("python/install/bin/python3")
    info.size = 10**18  # declared only: the archive is a few KB
    tar.addfile(info)


def _bomb(path: Path) -> Path:
    path.write_bytes(_bomb_bytes())
    return path


@functools.cache
def _bomb_bytes() -> bytes:
    """A small zstd archive (tens of KB) that expands to 1 GiB of zeros."""
    path = Path(tempfile.mkdtemp()) / "bomb.tar.zst"
    compressor = zstandard.ZstdCompressor(level=3)

    class Zeros(io.RawIOBase):
        def readable(self) -> bool:
            return True

        def readinto(self, b):  # type: ignore[no-untyped-def]
            b[:] = bytes(len(b))
            return len(b)

    with (
        path.open("wb") as raw,
        compressor.stream_writer(raw) as out,
        tarfile.open(fileobj=out, mode="w|", format=tarfile.GNU_FORMAT) as tar,
    ):
        info = tarfile.TarInfo("python/install/bin/python3")
        info.size = 2**30
        tar.addfile(info, io.BufferedReader(Zeros(), 1 << 20))
    data = path.read_bytes()
    shutil.rmtree(path.parent)
    return data


def _build_cases(outside: Path) -> dict[str, tuple[Callable[[Path], Path], str]]:
    """name -> (maker writing the archive at the path it gets, text the refusal holds)."""
    victim = str(outside / "victim.txt")

    def tar(build: Callable[[tarfile.TarFile], None]) -> Callable[[Path], Path]:
        return lambda path: _write(path, _tar_bytes(build))

    return {
        "hardlink-outside": (
            tar(
                lambda t: (
                    _file(t, "python/PYTHON.json", b"{}"),
                    _special(t, "python/x", tarfile.LNKTYPE, victim),
                )
            ),
            "not an earlier regular member",
        ),
        "hardlink-escaping": (
            tar(lambda t: _special(t, "python/x", tarfile.LNKTYPE, "../../victim.txt")),
            "not an earlier regular member",
        ),
        "device-node": (tar(lambda t: _special(t, "python/dev", tarfile.CHRTYPE)), "device nodes"),
        "fifo": (tar(lambda t: _special(t, "python/fifo", tarfile.FIFOTYPE)), "fifos"),
        "absolute-path": (tar(lambda t: _file(t, str(outside / "abs.txt"))), "an absolute path"),
        "dotdot-path": (tar(lambda t: _file(t, "python/../../escape.txt")), "escapes the archive"),
        "symlink-out": (
            tar(lambda t: _special(t, "python/lib", tarfile.SYMTYPE, "../../..")),
            "a symlink that leaves the archive",
        ),
        "symlink-absolute": (
            tar(lambda t: _special(t, "python/lib", tarfile.SYMTYPE, str(outside))),
            "a symlink to an absolute path",
        ),
        "symlink-chain-out": (
            tar(
                lambda t: (
                    _special(t, "python/a", tarfile.SYMTYPE, "b/.."),
                    _special(t, "python/b", tarfile.SYMTYPE, ".."),
                    _special(t, "python/c", tarfile.SYMTYPE, "a/../.."),
                )
            ),
            "a symlink that leaves the archive",
        ),
        "write-through-symlink": (
            tar(
                lambda t: (
                    _special(t, "python/lib", tarfile.SYMTYPE, "."),
                    _file(t, "python/lib/x.txt"),
                )
            ),
            "a member below the symlink",
        ),
        "duplicate-python-json": (
            tar(lambda t: (_file(t, "python/PYTHON.json", b"{}"), _file(t, "python/PYTHON.json", b"{}"))),
            "a duplicate member",
        ),
        "non-utf8-name": (
            tar(lambda t: _file(t, b"python/\xff\xfe.txt".decode("utf-8", "surrogateescape"))),
            "not UTF-8",
        ),
        "huge-declared-member": (lambda path: _write(path, _tar_bytes(_huge_member)), "more than the"),
        "zstd-bomb": (_bomb, "more than the"),
        "garbage-after-zstd-magic": (
            lambda path: (path.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(2000)), path)[1],
            "not a readable tar archive",
        ),
        "empty-archive": (lambda path: _write(path, _tar_bytes(lambda t: None)), "an empty archive"),
        # 1100 folders: unpacked, it broke every recursive walk and removal (RecursionError)
        "deep-tree": (
            tar(lambda t: (_file(t, "python/PYTHON.json", b"{}"), _file(t, "python/" + "d/" * 1100 + "f"))),
            "folders deep",
        ),
        "not-json": (
            tar(lambda t: (_file(t, "python/PYTHON.json", b"{not json"), _file(t, "python/install/bin/x"))),
            "PYTHON.json",
        ),
        "wrong-types-json": (
            tar(
                lambda t: (
                    _file(t, "python/PYTHON.json", json.dumps({"version": 8, "build_info": "x"}).encode()),
                    _file(t, "python/install/bin/x"),
                )
            ),
            "PYTHON.json",
        ),
    }


COMMANDS = {
    "validate": lambda a, tmp: ["validate", str(a)],
    "test-dist": lambda a, tmp: ["test-dist", str(a), "--tests", "none"],
    "embed": lambda a, tmp: [
        "embed",
        str(a),
        "-o",
        str(tmp / "out" / "python"),
        "--work-dir",
        str(tmp / "work"),
    ],
    "embed-memory": lambda a, tmp: ["embed", str(a), "--memory-importer", "-o", str(tmp / "out" / "python")],
    "reproduce": lambda a, tmp: ["reproduce", str(a)],
    "bench-import": lambda a, tmp: ["bench-import", str(a), "--runs", "10"],
}
CASE_NAMES = sorted(_build_cases(Path("/nonexistent")))


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.lstat().st_size, p.lstat().st_mode) for p in sorted(folder.rglob("*"))}


def _run(args: list[str], tmp: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYFREIGHT_BUILD_DIR": str(tmp / "build"), "PYFREIGHT_DIST_DIR": str(tmp / "dist")}
    env.pop("PYFREIGHT_DEBUG", None)
    return subprocess.run(
        [str(PYFREIGHT), *args], capture_output=True, text=True, env=env, cwd=tmp / "cwd", timeout=120
    )


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("case", CASE_NAMES)
def test_hostile_archive_is_refused(tmp_path, case, command):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me\n")
    (tmp_path / "cwd").mkdir()
    (tmp_path / "out").mkdir()
    make, expected = _build_cases(outside)[case]
    # reproduce reads the archive's name
    name = FULL_NAME if command == "reproduce" else f"{case}.tar.zst"
    archive = make(tmp_path / name)
    before = _snapshot(outside)

    proc = _run(COMMANDS[command](archive, tmp_path), tmp_path)

    _refused_alone(proc, expected, outside, before, tmp_path)


def _refused_alone(
    proc: subprocess.CompletedProcess[str], expected: str, outside: Path, before: dict, tmp_path: Path
) -> None:
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "Traceback" not in output, output
    assert expected in output, output
    # one line says what is wrong: the error line (validate prints its FAIL line too)
    assert len([line for line in proc.stderr.splitlines() if line.startswith("error:")]) == 1, output
    assert _snapshot(outside) == before
    assert (outside / "victim.txt").read_text() == "keep me\n"
    assert not any((tmp_path / "out").iterdir())
    assert not any((tmp_path / "cwd").iterdir())
    for leftover in (tmp_path / "build" / "tmp").glob("*") if (tmp_path / "build" / "tmp").is_dir() else []:
        pytest.fail(f"left behind: {leftover}")


def test_release_refuses_every_hostile_archive_of_one_run(tmp_path):
    """release takes many builds at once and validates each before reading anything of
    it: every case of the corpus (each with its install_only twins, one release tag
    apiece) in one run is named on a line of its own with its rule, and nothing is
    released or written outside."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("keep me\n")
    (tmp_path / "cwd").mkdir()
    (tmp_path / "out").mkdir()
    expected_of, fulls = {}, []
    for index, (case, (make, expected)) in enumerate(sorted(_build_cases(outside).items())):
        release = f"2026{index:04d}"
        fulls.append(make(tmp_path / FULL.file_name(SPEC, release)))
        for flavour in (INSTALL_ONLY, INSTALL_ONLY_STRIPPED):
            make(tmp_path / flavour.file_name(SPEC, release))
        expected_of[FULL.file_name(SPEC, release)] = (case, expected)
    before = _snapshot(outside)

    args = ["release", *map(str, fulls), "--tag", "20260805", "--base-url", "file:///srv/python"]
    proc = _run([*args, "-o", str(tmp_path / "out" / "r")], tmp_path)

    _refused_alone(proc, "nothing released", outside, before, tmp_path)
    lines = proc.stderr.splitlines()
    for name, (case, expected) in expected_of.items():
        said = [line for line in lines if line.strip().startswith(f"{name}:")]
        assert said and expected in said[0], (case, said, proc.stderr[-3000:])


@pytest.mark.parametrize(
    "args",
    [
        ["validate", "{dir}"],
        ["test-dist", "{dir}"],
        ["reproduce", "{dir}"],
        ["validate", "{missing}"],
        ["embed", "{missing}", "-o", "{tmp}/python"],
    ],
)
def test_a_folder_or_missing_file_is_named(tmp_path, args):
    (tmp_path / "cwd").mkdir()
    (tmp_path / "adir").mkdir()
    fill = {"dir": str(tmp_path / "adir"), "missing": str(tmp_path / "nope.tar.zst"), "tmp": str(tmp_path)}
    proc = _run([a.format(**fill) for a in args], tmp_path)
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.count("error:") == 1, proc.stderr


def test_every_case_is_refused_by_the_opening_itself(tmp_path):
    """The corpus without the CLI: each case raises UnsafeArchive or a PyfreightError
    from the one opening function, before a byte is written."""
    from pyfreight.errors import PyfreightError
    from pyfreight.formats.safe_archive import extract

    outside = tmp_path / "outside"
    outside.mkdir()
    for case, (make, _) in _build_cases(outside).items():
        if case in ("not-json", "wrong-types-json"):
            continue  # well-formed archives; PYTHON.json is judged by its reader
        archive = make(tmp_path / f"{case}.tar.zst")
        with pytest.raises(PyfreightError):
            extract(archive, tmp_path / f"x-{case}")
        assert not (tmp_path / f"x-{case}").exists(), case
    shutil.rmtree(outside)
