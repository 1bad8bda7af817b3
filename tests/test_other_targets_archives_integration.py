"""Every target other than the default, its archives made and used as a user would, each
target a part of test-all: `pyfreight build --target …` (dependencies, CPython, the three
archives; a foreign target cross-built with the default target's noopt build as build
python), of noopt and, where the C library can be linked statically, noopt+static; then
`validate`, `test-dist` of the stripped archive (under the emulator, or in the target's
libc-only runtime image; every product check: CPython's test subset there takes minutes
more and is left to the builds themselves), and, for targets with a cross compiler here,
`pyfreight embed` with it, whose interpreter runs through the emulator."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyfreight.formats.elf import interpreter_identity
from pyfreight.formats.tarball import extract
from pyfreight.targets import Target, all_targets
from tests.conftest import REPO, pyfreight_cli

pytestmark = pytest.mark.container
# Linux targets other than the default (Windows, run under Wine, has its own tests:
# test_windows_target_integration.py).
BUILT = (t for t in all_targets().values() if not t.is_default and t.os == "linux")
OTHERS = sorted(BUILT, key=lambda t: t.triple)
BUILDS = [(t, "noopt") for t in OTHERS] + [(t, "noopt+static") for t in OTHERS if t.libc.static_linking]


def _params(builds: list[tuple[Target, str]]) -> list:
    return [pytest.param(b, marks=pytest.mark.part(b[0].triple), id=f"{b[0].triple}-{b[1]}") for b in builds]


@pytest.fixture(scope="module", params=_params(BUILDS))
def archives(request, tmp_path_factory) -> Iterator[tuple[Target, dict[str, Path]]]:
    target, options = request.param
    dist = tmp_path_factory.mktemp("dist")
    proc = pyfreight_cli(
        "build", "--target", target.make_name, "--options", options, "--no-check",
        PYFREIGHT_DIST_DIR=str(dist),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    found = {p.name.rsplit("-", 1)[-1]: p for p in dist.iterdir()}
    assert set(found) == {"full.tar.zst", "install_only.tar.gz", "install_only_stripped.tar.gz"}, found
    assert all(target.triple in p.name for p in found.values())
    yield target, found
    shutil.rmtree(dist)  # one target's archives at a time


def test_the_archives_validate(archives):
    _, found = archives
    proc = pyfreight_cli("validate", *sorted(found.values()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("passed") == 3, proc.stdout


def test_the_stripped_archive_passes_test_dist_where_it_runs(archives):
    _, found = archives
    proc = pyfreight_cli("test-dist", found["install_only_stripped.tar.gz"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAIL" not in proc.stdout, proc.stdout


# The embed tests: the builds of targets that name a compiler here that links for them.
WITH_CROSS_CC = _params([b for b in BUILDS if b[0].toolchain.cross_cc and b[1] == "noopt"])


@pytest.mark.parametrize("archives", WITH_CROSS_CC, indirect=True)
def test_embed_needs_a_compiler_for_the_target(archives, tmp_path):
    target, found = archives
    cross = target.toolchain.cross_cc
    proc = pyfreight_cli("embed", found["full.tar.zst"], "-o", tmp_path / "python", CC="")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {found['full.tar.zst'].name} is for {target.triple}: name a compiler that links for it, "
        f"e.g. --cc {cross.command} (Debian: apt-get install {' '.join(cross.debian_packages)})"
    )


# A foreign target no Debian package links for (aarch64 musl): embed says so and stops.
WITHOUT_CROSS_CC = _params(
    [b for b in BUILDS if not b[0].native and not b[0].toolchain.cross_cc and b[1] == "noopt"]
)


@pytest.mark.parametrize("archives", WITHOUT_CROSS_CC, indirect=True)
def test_embed_without_a_compiler_for_the_target_says_so_in_one_line(archives, tmp_path):
    target, found = archives
    out = tmp_path / "python"
    proc = pyfreight_cli("embed", found["full.tar.zst"], "-o", out, CC="")
    assert proc.returncode != 0 and not out.exists()
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: {found['full.tar.zst'].name} is for {target.triple}: name a compiler that links for it"
    )


@pytest.mark.parametrize("archives", WITH_CROSS_CC, indirect=True)
def test_embed_with_the_cross_compiler_runs_under_the_emulator(archives, tmp_path):
    target, found = archives
    out = tmp_path / "python-embedded"
    proc = pyfreight_cli("embed", found["full.tar.zst"], "-o", out, "--cc", target.toolchain.cross_cc.command)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert interpreter_identity(out) == (target.elf.machine, target.elf.loader)
    # Beside the stdlib of the install tree, run through the emulator, which finds the
    # loader and C library the cross compiler linked against below its sysroot.
    extract(found["install_only.tar.gz"], tmp_path / "tree")
    installed = tmp_path / "tree" / "python" / "bin" / out.name
    out.rename(installed)
    libc = subprocess.run(
        [target.toolchain.cross_cc.command, "-print-file-name=libc.so.6"], capture_output=True, text=True
    )
    env = {"PATH": os.environ["PATH"], "QEMU_LD_PREFIX": str(Path(libc.stdout.strip()).parent.parent)}
    probe = "import platform, sqlite3, ssl, zlib, _ctypes; print(platform.machine(), sqlite3.sqlite_version)"
    ran = subprocess.run([installed, "-I", "-c", probe], capture_output=True, text=True, env=env, timeout=600)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.split()[0] == target.python_platform_tag.split("-")[-1]


# The x86-64 level builds (toolchain.cpu_level_check), run by qemu as a CPU below their
# level and as one at it. qemu's TCG has no AVX-512, so a v4 build runs only natively.
QEMU_CPUS = {"v2": ("qemu64", "Nehalem"), "v3": ("Nehalem", "Haswell"), "v4": ("Haswell", None)}
LEVELS = _params([b for b in BUILDS if b[0].toolchain.cpu_level_check and b[1] == "noopt"])


def _qemu(cpu: str, *argv: str | Path) -> subprocess.CompletedProcess[str]:
    qemu = shutil.which("qemu-x86_64-static")
    assert qemu, "qemu-x86_64-static is missing: make setup installs qemu-user-static"
    return subprocess.run([qemu, "-cpu", cpu, *argv], capture_output=True, text=True, timeout=600)


def _refusal(level: str) -> str:
    return f"Python: this build needs an x86-64-{level} CPU, and this one lacks "


@pytest.mark.parametrize("archives", LEVELS, indirect=True)
def test_a_level_build_refuses_a_cpu_below_its_level_in_one_line(archives, tmp_path):
    target, found = archives
    level = target.uv_platform.arch_variant
    below, at = QEMU_CPUS[level]
    extract(found["install_only.tar.gz"], tmp_path)
    python = tmp_path / "python" / "bin" / "python3"
    refused = _qemu(below, python, "-c", "print('ran')")
    assert refused.returncode == 1, refused
    lines = [line for line in refused.stderr.splitlines() if not line.startswith("qemu-x86_64-static:")]
    assert len(lines) == 1 and lines[0].startswith(_refusal(level)), refused.stderr
    assert refused.stdout == ""
    if at is not None:
        ran = _qemu(at, python, "-c", "import ssl, sqlite3, zlib; print('ran')")
        assert (ran.returncode, ran.stdout) == (0, "ran\n"), ran.stderr
    native = subprocess.run([python, "-c", "print('ran')"], capture_output=True, text=True, timeout=600)
    assert (native.returncode, native.stdout) == (0, "ran\n"), native.stderr  # this machine has AVX-512


@pytest.mark.parametrize("archives", LEVELS, indirect=True)
def test_a_level_builds_libpython_and_embedded_programs_refuse_a_cpu_below_it(archives, tmp_path):
    target, found = archives
    level = target.uv_platform.arch_variant
    below = QEMU_CPUS[level][0]
    # A program of the baseline level that loads the archive's libpython: the library's
    # own check refuses, before the program's main.
    extract(found["install_only.tar.gz"], tmp_path)
    lib = tmp_path / "python" / "lib"
    program = tmp_path / "uses-libpython"
    source = tmp_path / "main.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("main ran"); return 0; }\n')
    libpython = next(lib.glob("libpython3*.so.1.0"))
    linked = subprocess.run(
        ["cc", source, "-o", program, "-Wl,--no-as-needed", libpython, f"-Wl,-rpath,{lib}"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert linked.returncode == 0, linked.stderr
    refused = _qemu(below, program)
    assert refused.returncode == 1 and "main ran" not in refused.stdout, refused
    assert _refusal(level) in refused.stderr
    # A single-file program embed links from the full archive carries the check too.
    out = tmp_path / "embedded"
    proc = pyfreight_cli("embed", found["full.tar.zst"], "-o", out)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    refused = _qemu(below, out, "-c", "pass")
    assert refused.returncode == 1 and _refusal(level) in refused.stderr, refused


@pytest.mark.parametrize("archives", LEVELS, indirect=True)
def test_uv_installs_a_level_build_by_its_name_offline(archives, tmp_path):
    """`uv python install cpython-3.14.7-linux-x86_64_v3-gnu` from our release index, with
    no network: what uv installs is the level build (it refuses a CPU below the level)."""
    target, found = archives
    release = tmp_path / "release"
    made = pyfreight_cli("release", found["full.tar.zst"], "--base-url", f"file://{release}", "-o", release)
    assert made.returncode == 0, made.stderr[-3000:]
    version = found["full.tar.zst"].name.split("-")[1].split("+")[0]
    key = f"cpython-{version}-linux-x86_64_{target.uv_platform.arch_variant}-gnu"
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "UV_NO_CONFIG": "1",
        "UV_OFFLINE": "1",
        "UV_CACHE_DIR": str(tmp_path / "cache"),
        "UV_PYTHON_INSTALL_DIR": str(tmp_path / "pythons"),
        "UV_PYTHON_BIN_DIR": str(tmp_path / "bin"),
        "UV_PYTHON_DOWNLOADS_JSON_URL": f"file://{release}/downloads.json",
    }
    uv = REPO / ".venv" / "bin" / "uv"
    proc = subprocess.run([uv, "python", "install", key], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # uv installs the build under its key, and links its minor version's name to it.
    pythons = tmp_path / "pythons"
    minor = key.replace(f"-{version}-", "-{}-".format(version.rsplit(".", 1)[0]))
    assert sorted(p.name for p in pythons.glob("cpython-*")) == sorted([key, minor])
    assert (pythons / minor).resolve() == pythons / key
    installed = pythons / key / "bin" / "python3"
    native = subprocess.run([installed, "-c", "print('ran')"], capture_output=True, text=True, timeout=600)
    assert (native.returncode, native.stdout) == (0, "ran\n"), native.stderr
    refused = _qemu(QEMU_CPUS[target.uv_platform.arch_variant][0], installed, "-c", "pass")
    assert refused.returncode == 1 and _refusal(target.uv_platform.arch_variant) in refused.stderr, refused
