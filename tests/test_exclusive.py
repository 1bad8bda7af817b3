"""Two runs on one build folder: the second waits for the first's lock on a record, says
whom it waits for, and goes on when the holder is done or killed."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from pyfreight.records import exclusive

_HOLDER = """
import sys
from pathlib import Path
from pyfreight.records import exclusive
with exclusive(Path(sys.argv[1]), "holder"):
    print("held", flush=True)
    sys.stdin.read()  # until the test closes stdin
"""


def _holder(record: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(record)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


def _enter_in_thread(record: Path) -> tuple[threading.Thread, threading.Event]:
    entered = threading.Event()

    def enter() -> None:
        with exclusive(record, "second run"):
            entered.set()

    thread = threading.Thread(target=enter, daemon=True)
    thread.start()
    return thread, entered


@pytest.mark.parametrize("release", ["finishes", "is killed"])
def test_the_second_run_waits_for_the_holder(tmp_path: Path, capfd, release: str) -> None:
    record = tmp_path / "cpython-x.json"
    holder = _holder(record)
    thread, entered = _enter_in_thread(record)
    assert not entered.wait(1.0), "entered while another process held the lock"
    said = capfd.readouterr().err
    assert f"second run: waiting for another run (pid {holder.pid}) using {tmp_path}" in said
    if release == "finishes":
        holder.communicate("")
    else:
        holder.kill()  # the kernel drops a dead process's flock: no stale lock
        holder.wait()
    assert entered.wait(10.0)
    thread.join(10.0)


def test_an_unheld_lock_is_taken_at_once_and_again(tmp_path: Path, capfd) -> None:
    record = tmp_path / "deep" / "r.json"
    for _ in range(2):
        started = time.monotonic()
        with exclusive(record, "run"):
            pass
        assert time.monotonic() - started < 1.0
    assert "waiting" not in capfd.readouterr().err
    assert not record.exists()  # the lock vouches for nothing; only a record does
