"""Every Windows target but the 64-bit x86 one (test_windows_target_integration.py), each
a part of test-all, used as a user would: `make NAME-noopt` (dependencies, CPython from
its own projects, check-install and CPython's test subset under Wine with Wine's own
Visual C++ runtime off where Wine runs the target, the three archives); the archives
validate, and a copy whose python.exe or Visual C++ runtime is of another machine fails
in one line naming it; test-dist of the stripped archive under Wine; a single-file .exe
from `pyfreight embed --memory-importer` of the target's machine, which runs alone in an
empty folder. Arm64's run under Debian's arm64 Wine through qemu-user (targets/*.yaml
run.wine.emulator); GitHub's Arm64 Windows runs them natively (.github/workflows/windows.yml)."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pyfreight.formats.tarball import extract
from pyfreight.paths import default_workspace
from pyfreight.runners.wine import run_windows_program
from pyfreight.targets import Target, all_targets
from tests.conftest import REPO, pyfreight_cli, run_group

pytestmark = pytest.mark.container
OTHERS = sorted(
    (t for t in all_targets().values() if t.binary_format == "pe" and t.pe.machine != "AMD64"),
    key=lambda t: t.triple,
)
# A COFF machine field of another architecture than each target's, for the broken copies.
OTHER_MACHINE = {"I386": 0x8664, "ARM64": 0x8664}
COFF_MACHINE_NUMBERS = {"I386": 0x014C, "AMD64": 0x8664, "ARM64": 0xAA64}


def _machine_of(pe: Path) -> int:
    image = pe.read_bytes()
    at = int.from_bytes(image[0x3C:0x40], "little") + 4
    return int.from_bytes(image[at : at + 2], "little")


def _set_machine(pe: Path, machine: int) -> None:
    image = bytearray(pe.read_bytes())
    at = int.from_bytes(image[0x3C:0x40], "little") + 4
    image[at : at + 2] = machine.to_bytes(2, "little")
    pe.write_bytes(bytes(image))


def _validate_a_copy_with(found: dict[str, Path], tmp_path: Path, name: str, machine: int):
    """validate of the install_only archive with python/NAME's machine field changed."""
    unpacked = tmp_path / f"unpacked-{name}"
    extract(found["install_only.tar.gz"], unpacked)
    _set_machine(unpacked / "python" / name, machine)
    broken = tmp_path / f"broken-{name}-install_only.tar.gz"
    subprocess.run(["tar", "czf", broken, "-C", unpacked, "python"], check=True)
    proc = pyfreight_cli("validate", broken)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    return [line for line in proc.stdout.splitlines() if line.startswith("FAIL")]


@pytest.fixture(
    scope="module", params=[pytest.param(t, marks=pytest.mark.part(t.triple), id=t.triple) for t in OTHERS]
)
def archives(request, tmp_path_factory) -> Iterator[tuple[Target, dict[str, Path]]]:
    target: Target = request.param
    dist = tmp_path_factory.mktemp("dist")
    made = run_group(
        ["make", f"{target.make_name}-noopt"], cwd=REPO, timeout=3 * 3600,
        env={**os.environ, "PYFREIGHT_DIST_DIR": str(dist)},
    )  # fmt: skip
    # the build fails unless check-install (its test subset included) passed, now or for
    # the same tree before
    assert made.returncode == 0, made.stdout[-3000:] + made.stderr[-3000:]
    found = {p.name.rsplit("-", 1)[-1]: p for p in dist.iterdir()}
    assert set(found) == {"full.tar.zst", "install_only.tar.gz", "install_only_stripped.tar.gz"}, found
    yield target, found
    shutil.rmtree(dist)


def test_the_archives_validate_and_a_vc_runtime_of_another_machine_is_named(archives, tmp_path):
    target, found = archives
    proc = pyfreight_cli("validate", *sorted(found.values()))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("passed") == 3, proc.stdout
    problems = _validate_a_copy_with(found, tmp_path, "vcruntime140.dll", OTHER_MACHINE[target.pe.machine])
    machine = f"machine AMD64, not {target.pe.machine} ({target.triple})"
    assert problems == [
        f"FAIL  python/vcruntime140.dll: {machine}: a vendor's DLL of another architecture, "
        "which Windows refuses to load; ship the pinned wheel's file"
    ], problems


def test_a_python_exe_of_another_machine_fails_validate_in_one_line(archives, tmp_path):
    target, found = archives
    problems = _validate_a_copy_with(found, tmp_path, "python.exe", OTHER_MACHINE[target.pe.machine])
    assert len(problems) == 1, problems
    assert problems[0].startswith("FAIL  python/python.exe: ") and (
        f"machine AMD64, not {target.pe.machine} ({target.triple})" in problems[0]
    ), problems


def test_the_stripped_archive_passes_test_dist_under_wine(archives):
    target, found = archives
    if target.run.kind != "wine":
        pytest.skip(f"{target.triple}: nothing here runs its programs (targets/*.yaml run.unavailable)")
    proc = pyfreight_cli("test-dist", found["install_only_stripped.tar.gz"])
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FAIL" not in proc.stdout, proc.stdout


def test_a_single_file_exe_runs_alone_and_imports_the_stdlib_from_memory(archives, tmp_path):
    target, found = archives
    app = tmp_path / "app" / "hello"
    app.mkdir(parents=True)
    (app / "__init__.py").write_text(
        "import json, ssl, struct, sys\n"
        "def main():\n"
        "    print('hello', struct.calcsize('P') * 8, json.dumps(sys.version_info[:2]), json.__file__)\n"
    )
    alone = tmp_path / "alone"
    alone.mkdir()
    proc = pyfreight_cli(
        "embed", found["full.tar.zst"], "-o", alone / "hello.exe", "--memory-importer",
        "--app", app.parent, "--main", "hello:main",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert sorted(p.name for p in alone.iterdir()) == ["hello.exe"]
    assert _machine_of(alone / "hello.exe") == COFF_MACHINE_NUMBERS[target.pe.machine]
    if target.run.kind != "wine":
        return  # linked for its machine; GitHub's Arm64 Windows runs such programs
    alone.chmod(0o755)
    result = run_windows_program(target, default_workspace(), alone, "hello.exe")
    bits = 32 if target.pe.machine == "I386" else 64
    assert result.stdout.startswith(f"hello {bits} [3, 14] "), result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("hello.exe/json/__init__.py"), result.stdout  # from memory
