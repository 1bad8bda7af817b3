"""Every Windows target but the 64-bit x86 one (test_windows_target_integration.py), each
a part of test-all, used as a user would: `make NAME-noopt` (dependencies, CPython from
its own projects, check-install and CPython's test subset under Wine with Wine's own
Visual C++ runtime off, the three archives); the archives validate, and a copy whose
Visual C++ runtime is of another machine fails in one line naming it; test-dist of the
stripped archive under Wine; a single-file .exe from `pyfreight embed
--memory-importer` runs alone in an empty folder."""

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
    (t for t in all_targets().values() if t.run.kind == "wine" and t.pe.machine != "AMD64"),
    key=lambda t: t.triple,
)
# A COFF machine field of another architecture than each target's, for the broken copy.
OTHER_MACHINE = {"I386": 0x8664, "ARM64": 0x8664}


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
    unpacked = tmp_path / "unpacked"
    extract(found["install_only.tar.gz"], unpacked)
    runtime = unpacked / "python" / "vcruntime140.dll"
    image = bytearray(runtime.read_bytes())
    machine_at = int.from_bytes(image[0x3C:0x40], "little") + 4
    image[machine_at : machine_at + 2] = OTHER_MACHINE[target.pe.machine].to_bytes(2, "little")
    runtime.write_bytes(bytes(image))
    broken = tmp_path / "broken-install_only.tar.gz"
    subprocess.run(["tar", "czf", broken, "-C", unpacked, "python"], check=True)
    proc = pyfreight_cli("validate", broken)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    problems = [line for line in proc.stdout.splitlines() if "vcruntime140.dll" in line]
    machine = f"machine AMD64, not {target.pe.machine} ({target.triple})"
    assert problems == [
        f"FAIL  python/vcruntime140.dll: {machine}: a vendor's DLL of another architecture, "
        "which Windows refuses to load; ship the pinned wheel's file"
    ], proc.stdout


def test_the_stripped_archive_passes_test_dist_under_wine(archives):
    _, found = archives
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
    alone.chmod(0o755)
    result = run_windows_program(target, default_workspace(), alone, "hello.exe")
    bits = 32 if target.pe.machine == "I386" else 64
    assert result.stdout.startswith(f"hello {bits} [3, 14] "), result.stdout + result.stderr
    assert result.stdout.rstrip().endswith("hello.exe/json/__init__.py"), result.stdout  # from memory
