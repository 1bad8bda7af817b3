"""The commands of README.md, typed as a user types them (the `pyfreight` console script
and the make targets, as subprocesses), on the real CPython 3.14 noopt build and its
archives that the other container tests use. Together with the CLI calls in the
distribution, embed and memory-importer tests, every subcommand runs here; the flags
that need a pgo+lto build (bench, --pgo-profile reuse) are run up to the point they
check their input, since such a build does not fit into a CI run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from pathlib import Path

import pytest

from pyfreight.archives.flavours import FLAVOURS
from pyfreight.cpython.naming import folder_stem, parse_full_name
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.spec import BuildSpec
from pyfreight.paths import default_workspace
from pyfreight.records import exclusive
from tests.conftest import PYFREIGHT, REPO, pyfreight_cli, run_group
from tests.tiers import BENCHMARKS

pytestmark = pytest.mark.container


def _ok(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    return proc.stdout + proc.stderr


def _make(*args: str) -> subprocess.CompletedProcess[str]:
    return run_group(["make", "-C", str(REPO), *args], timeout=3600, env=dict(os.environ))


def test_recipes_images_fetch_and_deps(noopt_dist):
    """After the noopt build (so the sources are cached and the images exist)."""
    assert "openssl" in _ok(pyfreight_cli("recipes"))
    assert re.search(r"tag:\s+pyfreight-build:", _ok(pyfreight_cli("images")))
    assert "verified" in _ok(pyfreight_cli("fetch", "--all"))
    assert "verified" in _ok(pyfreight_cli("fetch", "zlib", "xz", "--offline"))
    out = _ok(pyfreight_cli("deps", "zlib", "xz", "-j", "1", "--jobs", "2", "--offline"))
    assert "up to date" in out and "zlib" in out


def test_deps_force_rebuilds_the_same_bytes(noopt_dist):
    before = _ok(pyfreight_cli("deps", "zlib"))
    path = re.search(r"^zlib\s+(\S+)$", before, re.M)
    assert path is not None, before
    digest = subprocess.run(["sha256sum", path.group(1)], capture_output=True, text=True).stdout.split()[0]
    out = _ok(pyfreight_cli("deps", "zlib", "--force"))
    assert "1 built" in out
    again = subprocess.run(["sha256sum", path.group(1)], capture_output=True, text=True).stdout.split()[0]
    assert again == digest


def test_build_is_up_to_date_and_flags_are_checked(noopt_dist):
    out = _ok(pyfreight_cli("build", "--python", "3.14", "--options", "noopt", "--no-check", "--no-dist"))
    assert "up to date" in out and "install tree:" in out
    wrong = pyfreight_cli("build", "--options", "noopt", "--pgo-profile", "/nonexistent.profdata")
    assert wrong.returncode == 1 and "--pgo-profile is for pgo builds" in wrong.stderr
    alone = pyfreight_cli("build", "--options", "pgo+lto", "--bolt-profile", "/nonexistent.fdata")
    assert alone.returncode == 1 and "Traceback" not in alone.stderr
    assert "--bolt-profile fits only the build its --pgo-profile makes" in alone.stderr
    unknown = pyfreight_cli("build", "--options", "fast")
    assert unknown.returncode == 1 and "unknown build option 'fast'" in unknown.stderr
    bench = pyfreight_cli("bench", "--python", "3.14", "--only", "nosuch", "--rigorous")
    assert bench.returncode == 1 and "no benchmark named nosuch" in bench.stderr
    # the C-library table alone has no pyperformance rows
    libraries = pyfreight_cli("bench", "--suite", "libraries", "--only", "nbody")
    assert libraries.returncode == 1 and "no benchmark named nbody in the libraries suite" in libraries.stderr


def test_a_second_build_on_the_same_folder_waits_for_the_first(noopt_dist):
    """While one run holds the build's record (here: this test, as a first run would while
    it builds), `pyfreight build` of the same build waits and says for whom, then finds
    the work done instead of writing the same tree at the same time."""
    spec = BuildSpec.resolve("3.14", "noopt", None)
    record = default_workspace().build / f"{folder_stem(spec)}.json"
    command = [str(PYFREIGHT), "build", "--python", "3.14", "--options", "noopt", "--no-check", "--no-dist"]
    with exclusive(record, "first run"):
        second = subprocess.Popen(
            command, cwd=REPO, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True
        )
        assert second.stderr is not None
        seen = ""
        while "waiting for another run" not in seen:
            line = second.stderr.readline()
            assert line, f"the second run ended without waiting: {seen[-2000:]}"
            seen += line
        assert f"(pid {os.getpid()})" in seen
        time.sleep(1.0)
        assert second.poll() is None, "the second run went on while the first held the build"
    _, err = second.communicate(timeout=600)
    assert second.returncode == 0, (seen + err)[-3000:]
    assert f"cpython {spec.version} noopt: up to date" in err


def test_make_built_the_archives_and_then_is_up_to_date_in_seconds(noopt_dist):
    """The session's archives were made by `make linux-x86_64-noopt` (tests/conftest.py);
    the same command again, with the README's variables and nothing changed, redoes
    nothing (build, check and archives are keyed records)."""
    dist = noopt_dist.full.parent
    spec, release = parse_full_name(noopt_dist.full.name) or (None, "")
    assert spec == BuildSpec.resolve("3.14", "noopt", "x86_64-unknown-linux-gnu")
    assert sorted(p.name for p in dist.iterdir()) == sorted(f.file_name(spec, release) for f in FLAVOURS)
    assert (
        noopt_dist.full.name
        == f"cpython-{spec.version}+{release}-x86_64-unknown-linux-gnu-noopt-full.tar.zst"
    )
    os.environ["PYFREIGHT_DIST_DIR"] = str(dist)
    try:
        for variable in ("PYTHON=3.14", "CPYTHON=3.14"):
            started = time.monotonic()
            again = _make("linux-x86_64-noopt", variable, "ARGS=--no-check")
            elapsed = time.monotonic() - started
            assert again.returncode == 0, again.stderr[-3000:]
            assert "up to date" in again.stderr and "dist: up to date" in again.stderr
            assert elapsed < 120, f"a warm make took {elapsed:.0f} s"
        out = _ok(pyfreight_cli("dist", "--python", "3.14", "--options", "noopt", "--release", release))
        assert "dist: up to date" in out
    finally:
        del os.environ["PYFREIGHT_DIST_DIR"]


def test_make_front_door_targets(noopt_dist):
    for target in ("setup", "fetch", "deps", "images"):
        proc = _make(target)
        assert proc.returncode == 0, f"make {target}: {proc.stderr[-2000:]}"


@pytest.mark.part(BENCHMARKS)
def test_bench_import_on_an_archive(noopt_dist):
    out = _ok(pyfreight_cli("bench-import", noopt_dist.full, "--runs", "10", "--cc", "gcc"))
    assert re.search(r"^stdlib import\s+[0-9.]+ ms\s+[0-9.]+ ms", out, re.M), out[-2000:]
    assert re.search(r"^import, GC deferred\s+[0-9.]+ ms\s+[0-9.]+ ms", out, re.M), out[-2000:]
    assert re.search(
        r"^GC frozen: the policy alone .* [0-9.]+; importer and policy .* [0-9.]+$", out, re.M
    ), out[-2000:]
    assert re.search(r"^import, GC deferred\+frozen\s+[0-9.]+ ms\s+[0-9.]+ ms", out, re.M), out[-2000:]
    assert re.search(r"^start-up, GC frozen\s+[0-9.]+ ms\s+[0-9.]+ ms", out, re.M), out[-2000:]
    assert "bench-import: saved" in out


@pytest.mark.part(BENCHMARKS)
def test_bench_app_beside_pyinstaller(noopt_dist):
    """`pyfreight bench-app ARCHIVE`: three applications made by embed's defaults and by
    PyInstaller --onefile (from PyPI, on the host's Python), each run alone; one table,
    one JSON, where every executable ran and said what its code prints."""
    out = _ok(pyfreight_cli("bench-app", noopt_dist.full, "--runs", "10"))
    for app in ("hello", "tls-sqlite-json", "rich-table"):
        assert re.search(rf"^{app}\s+([0-9.]+\s+){{5}}$", out + "\n", re.M), out[-3000:]
    saved = re.search(r"bench-app: saved (\S+\.json)", out)
    assert saved is not None, out[-2000:]
    report = json.loads(Path(saved.group(1)).read_text())
    outputs = report["outputs"]
    for maker in ("pyfreight", "PyInstaller", "python -c"):
        assert outputs[f"hello {maker}"] == "hello world\n", outputs
        assert json.loads(outputs[f"tls-sqlite-json {maker}"]) == {"verify": True, "rows": [[42]]}, outputs
        assert "pyfreight" in outputs[f"rich-table {maker}"], outputs
    assert all(size > 1_000_000 for size in report["bytes"].values()), report["bytes"]


@pytest.mark.part(BENCHMARKS)
def test_bench_our_build_against_another_tree_and_debian(noopt_dist, tmp_path):
    """`pyfreight bench --options … --against …` for real: two benchmarks on our noopt
    build, the same tree handed in as another column, and Debian's python3.14, in the
    bench container; the probe's flags and start-up resources land in the JSON."""
    tree = tmp_path / "extracted"
    subprocess.run(["tar", "-xf", noopt_dist.install_only, "-C", tmp_path], check=True)
    (tmp_path / "python").rename(tree)
    out = _ok(
        pyfreight_cli(
            "bench", "--python", "3.14", "--options", "noopt", "--against", f"mine={tree}",
            "--only", "python_startup_no_site,nbody,zstd_decompress,ssl_handshake",
        )
    )  # fmt: skip
    saved = re.search(r"^saved: (\S+\.json)", out, re.M)
    assert saved is not None, out[-2000:]
    report = json.loads(Path(saved.group(1)).read_text())
    labels = report["interpreters"]
    assert labels[:2] == ["noopt", "mine"] and labels[2].startswith("debian "), labels
    assert set(report["results"]) == {"python_startup_no_site", "nbody"}
    # the C-library rows form their own table, measured on every interpreter
    assert set(report["libraries"]) == {"zstd_decompress", "ssl_handshake"}
    for row in [*report["results"].values(), *report["libraries"].values()]:
        assert set(row) == set(labels) and all(0 < t < 60 for t in row.values())
    assert "C libraries" in out and "zstd_decompress at least 1.00x" in out
    ours = report["probe"]["noopt"]
    # our tree is as its build options say: a PIE unless built with +nopie
    assert ours["facts"]["pie"] is BuildOptions.parse("noopt").codegen.pie
    assert ours["facts"]["config"]["CFLAGS"] and report["probe"][labels[2]]["facts"]["pie"] is not None
    for label in labels:
        use = report["probe"][label]["startup"]["python -c pass"]
        assert 4 * 1024 < use["peak_rss_kib"] < 200 * 1024 and use["minor_faults"] > 100, (label, use)
    assert report["pyfreight"]["commit"] != "unknown"
    assert "peak RSS" in out and "mine/noopt" in out
