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
from tests.conftest import pyfreight_cli

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
