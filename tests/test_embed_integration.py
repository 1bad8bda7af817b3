"""`pyfreight embed` on the real 3.14 noopt archive: interpreters linked with gcc and
with clang run with the archive's stdlib, pass the distribution's own import checks
for what they kept and fail cleanly for what they left out; --emit-lib's library links
the C example of docs/embedding.md."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from pyfreight import toolchain
from pyfreight.cpython.options import BuildOptions
from pyfreight.embed.command import embed
from pyfreight.formats.tarball import extract
from tests.conftest import pyfreight_cli

# Reads the noopt build's archives only: beside the engine group (conftest.py)
pytestmark = [pytest.mark.container, pytest.mark.archive_reader]

ROOT = Path(__file__).resolve().parent.parent
CHECKS = ROOT / "pyfreight" / "in_container" / "interpreter_checks.py"
DROPPED_BY_MINIMAL = ["_ssl", "_sqlite3", "zlib", "_decimal", "_tkinter", "_ctypes"]


@pytest.fixture(scope="module")
def tree(noopt_dist, tmp_path_factory) -> Iterator[Path]:
    """The extracted full archive (its python/ folder)."""
    root = tmp_path_factory.mktemp("archive")
    extract(noopt_dist.full, root)
    yield root / "python"
    shutil.rmtree(root)


def _run(binary: Path, tree: Path, *args: str) -> subprocess.CompletedProcess:
    """Runs `binary` from the archive's install tree's bin/, where it finds the stdlib
    as the distribution's own python3 does (so -I works, which ignores PYTHONHOME)."""
    installed = tree / "install" / "bin" / binary.name
    if not installed.exists() or installed.stat().st_mtime_ns != binary.stat().st_mtime_ns:
        shutil.copy2(binary, installed)  # once per linked binary, not once per run
    env = {"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8"}
    return subprocess.run([str(installed), *args], capture_output=True, text=True, env=env, timeout=600)


def test_minimal_interpreter_with_gcc(noopt_dist, tree, tmp_path):
    out = tmp_path / "python-minimal"
    proc = pyfreight_cli(
        "embed", noopt_dist.full, "-o", out, "--extensions", "minimal", "--cc", "gcc", "--strip", "--pie"
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = dict(line.split(":", 1) for line in proc.stdout.splitlines() if ":" in line)
    dropped = [n.strip() for n in report["left out"].split(",")]
    assert set(DROPPED_BY_MINIMAL) <= set(dropped)
    with out.open("rb") as fh:
        # --pie: a PIE from the PIE-ready objects of an archive whose python3 is not one
        assert ELFFile(fh)["e_type"] == "ET_DYN"
    with out.open("rb") as fh:
        sections = [s.name for s in ELFFile(fh).iter_sections()]
    assert not [s for s in sections if s.startswith(".debug")], sections
    probe = _run(
        out,
        tree,
        "-I",
        "-c",
        "import sys, os, datetime, encodings.latin_1; print(' '.join(sys.builtin_module_names))",
    )
    assert probe.returncode == 0, probe.stderr
    assert len(probe.stdout.split()) == int(report["built in"].split()[0])
    for name in DROPPED_BY_MINIMAL:
        dropped = _run(out, tree, "-c", f"import {name}")
        assert dropped.returncode == 1
        assert f"ModuleNotFoundError: No module named '{name}'" in dropped.stderr, dropped.stderr


def test_all_extensions_with_clang_pass_the_distribution_checks(tree, tmp_path):
    out = tmp_path / "python-all"
    result = embed(tree, out, selection="all", cc=f"clang-{toolchain.LLVM}")
    assert result.dropped == []
    with out.open("rb") as fh:
        # linked as the archive's own python3 is: position-dependent by default
        assert ELFFile(fh)["e_type"] == ("ET_DYN" if BuildOptions.parse("noopt").codegen.pie else "ET_EXEC")
    checks = _run(out, tree, str(CHECKS))
    failed = [line for line in checks.stdout.splitlines() if line.startswith("FAIL")]
    assert failed == [], checks.stdout + checks.stderr
    assert "PASS  every stdlib module imports" in checks.stdout
    assert "PASS  extension modules are built in" in checks.stdout


def test_emit_lib_links_the_documented_example(tree, tmp_path):
    library = tmp_path / "libpython3.14.a"
    result = embed(tree, library, selection="all", cc="gcc", emit_lib=True)
    doc = (ROOT / "docs" / "embedding.md").read_text()
    example = re.search(r"```c\n(.*?)```", doc, re.S)
    assert example, "docs/embedding.md lost its C example"
    (tmp_path / "example.c").write_text(example.group(1))
    link = result.link_line.split()[1:]  # the library itself, then system libraries
    include = tree / "install" / "include" / "python3.14"
    subprocess.run(
        ["gcc", f"-I{include}", "example.c", str(library), *link, "-o", "example"], cwd=tmp_path, check=True
    )
    run = subprocess.run(
        [str(tmp_path / "example")], capture_output=True, text=True, env={"PYTHONHOME": str(tree / "install")}
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == '{"embedded": [3, 14]}'


def test_embed_output_is_reproducible(tree, tmp_path):
    """Two links in different scratch folders give the same bytes: no temporary paths,
    timestamps or owners reach the executable or the library."""
    outputs = []
    for run in ("one", "two"):
        (tmp_path / run).mkdir()
        binary, library = tmp_path / run / "python-min", tmp_path / run / "libpython.a"
        embed(tree, binary, selection="minimal", cc="gcc", keep_work=tmp_path / run / "work")
        embed(
            tree, library, selection="minimal", cc="gcc", emit_lib=True, keep_work=tmp_path / run / "libwork"
        )
        outputs.append((binary.read_bytes(), library.read_bytes()))
    assert outputs[0][0] == outputs[1][0], "the interpreter differs between two links"
    assert outputs[0][1] == outputs[1][1], "the static library differs between two runs"


def test_extracted_folder_cannot_lead_outside(noopt_dist, tmp_path):
    """An extracted folder given to embed is judged like an archive: a library PYTHON.json
    names that is a symlink out of the folder is refused, and so is a compiler flag
    outside the allow-list; nothing is written."""
    from pyfreight.formats.safe_archive import extract as safe_extract

    folder = tmp_path / "unpacked"
    safe_extract(noopt_dist.full, folder)
    library = folder / "python" / "build" / "lib" / "libssl.a"
    library.unlink()
    library.symlink_to("/etc/passwd")
    proc = pyfreight_cli("embed", folder, "-o", tmp_path / "python", "--cc", "gcc")
    assert proc.returncode == 1
    assert "names build/lib/libssl.a, which leads outside the archive" in proc.stderr
    assert not (tmp_path / "python").exists()

    document = json.loads((folder / "python" / "PYTHON.json").read_text())
    document["build_info"]["inittab_cflags"] += ["-wrapper", f"/bin/sh,-c,touch {tmp_path}/pwned"]
    (folder / "python" / "PYTHON.json").write_text(json.dumps(document))
    proc = pyfreight_cli("embed", folder, "-o", tmp_path / "python", "--extensions", "minimal")
    assert proc.returncode == 1 and "has '-wrapper', which embed does not pass" in proc.stderr
    assert not (tmp_path / "pwned").exists()


def _refusing_cc(tmp_path: Path) -> Path:
    """A compiler that says its version and fails at everything else."""
    cc = tmp_path / "refusing-cc"
    answers = 'case "$1" in --version) echo "refusing-cc 1.0";; *) echo "refusing-cc: no" >&2; exit 1;; esac'
    cc.write_text(f"#!/bin/sh\n{answers}\n")
    cc.chmod(0o755)
    return cc


def test_a_failing_link_without_work_dir_names_a_log_that_is_still_there(tree, tmp_path):
    """Without --work-dir the work folder goes with the failure; the log it names does not."""
    cc = _refusing_cc(tmp_path)
    proc = pyfreight_cli("embed", tree, "-o", tmp_path / "python-x", "--extensions", "minimal", "--cc", cc)
    assert proc.returncode != 0 and "Traceback" not in proc.stderr, proc.stderr
    named = re.search(r"; log (\S+):$", proc.stderr, re.M)
    assert named, proc.stderr
    log = Path(named[1])
    try:
        assert log.is_file() and "refusing-cc: no" in log.read_text(), named[1]
        assert log.parent.name == "logs", named[1]
    finally:
        log.unlink(missing_ok=True)
    assert not (tmp_path / "python-x").exists()


def test_a_work_dir_is_reused_by_the_next_embed_and_a_users_folder_is_refused(noopt_dist, tmp_path):
    cc, work = _refusing_cc(tmp_path), tmp_path / "work"
    for _ in range(2):  # the second finds the first's extraction and starts afresh
        proc = pyfreight_cli(
            "embed", noopt_dist.full, "-o", tmp_path / "python-x", "--extensions", "minimal", "--cc", cc,
            "--work-dir", work,
        )  # fmt: skip
        assert proc.returncode != 0 and "refusing-cc: no" in proc.stderr, proc.stderr[-2000:]
        assert (work / "embed.log").is_file() and "Traceback" not in proc.stderr
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("the user's\n")
    proc = pyfreight_cli("embed", noopt_dist.full, "-o", tmp_path / "python-x", "--work-dir", mine)
    assert proc.returncode != 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"error: --work-dir {mine}: holds files pyfreight embed did not put there; name a new or empty folder"
    ), proc.stderr
    assert sorted(p.name for p in mine.iterdir()) == ["notes.txt"]
