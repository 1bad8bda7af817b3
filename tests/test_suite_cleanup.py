"""The suite ends cleanly however deep the trees its tests write: pytest removes old
sessions' temporary folders with a recursive rmtree, which broke at exit on the hostile
1100-folder trees once later sessions had made this one old (CI failed after every test
had passed)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_group

A_TEST_LEAVING_A_DEEP_TREE = """
def test_deep(tmp_path):
    folder = tmp_path
    for _ in range(1100):
        folder = folder / "d"
        folder.mkdir()
"""


def test_sessions_after_one_that_left_a_deep_tree_end_cleanly(tmp_path: Path) -> None:
    (tmp_path / "test_deep.py").write_text(A_TEST_LEAVING_A_DEEP_TREE)
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    root = tmp_path / "temproot"
    root.mkdir()
    env = {**os.environ, "PYTEST_DEBUG_TEMPROOT": str(root), "PYTHONPATH": str(REPO)}
    # pytest keeps the last three sessions' folders: the fourth removes the first's.
    for session in range(4):
        ran = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "tests.conftest",
                "-c",
                str(tmp_path / "pytest.ini"),
                str(tmp_path / "test_deep.py"),
            ],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        shown = f"session {session}: {ran.returncode}\n{ran.stdout[-1500:]}{ran.stderr[-1500:]}"
        assert ran.returncode == 0 and "RecursionError" not in ran.stderr, shown


def test_a_timeout_ends_the_whole_process_group(tmp_path: Path) -> None:
    """run_group's timeout ends what the command started too (as make starts pyfreight),
    not the command alone."""

    pid_file = tmp_path / "grandchild"
    with pytest.raises(subprocess.TimeoutExpired):
        run_group(["sh", "-c", f"sleep 300 & echo $! > {pid_file}; wait"], timeout=2)
    grandchild = int(pid_file.read_text())
    for _ in range(50):
        try:
            os.kill(grandchild, 0)
        except ProcessLookupError:
            return
        if Path(f"/proc/{grandchild}/stat").read_text().split()[2] == "Z":
            return  # ended, waiting for its reaper
        time.sleep(0.1)
    raise AssertionError(f"the command's child {grandchild} outlived the timeout")
