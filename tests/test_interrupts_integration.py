"""Interrupts, with a real container build of a recipe that takes long: Ctrl-C (SIGINT to
the whole process group, as a terminal sends it) and SIGTERM (to the driver alone, as
`kill` or a CI runner sends it) stop the build promptly and leave no container, no
staging folder and no artifact; a driver killed outright (SIGKILL) leaves both, and the
next run sweeps them."""

from __future__ import annotations

import hashlib
import io
import os
import signal
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import PYFREIGHT, linked_build_folder

pytestmark = pytest.mark.container

SLOW = "echo building; sleep 600\n"
QUICK = 'tar -xf "$SRC/sleepy-1.0.tar" && mkdir -p "$PREFIX/share/s" && echo done > "$PREFIX/share/s/x"\n'


def _recipe(root: Path, build_sh: str) -> None:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        info = tarfile.TarInfo("sleepy-1.0/LICENSE")
        info.size, info.mtime = 4, 1_600_000_000
        tar.addfile(info, io.BytesIO(b"MIT\n"))
    data = buf.getvalue()
    (root / "mirror").mkdir(exist_ok=True)
    (root / "mirror" / "sleepy-1.0.tar").write_bytes(data)
    folder = root / "recipes" / "sleepy"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "build.sh").write_text(build_sh)
    pin = {
        "file": "sleepy-1.0.tar",
        "sha256": hashlib.sha256(data).hexdigest(),
        "size": len(data),
        "urls": [],
    }
    recipe = {"name": "sleepy", "version": "1.0", "license": "MIT", "license_files": ["sleepy-1.0/LICENSE"],
              "depends": [], "sources": [pin]}  # fmt: skip
    (folder / "recipe.yaml").write_text(yaml.safe_dump(recipe))


def _env(root: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PYFREIGHT_RECIPES_DIR": str(root / "recipes"),
        "PYFREIGHT_BUILD_DIR": str(root / "build"),
        "PYFREIGHT_MIRRORS": str(root / "mirror"),
    }


def _containers(pid: int) -> list[str]:
    proc = subprocess.run(
        ["docker", "ps", "-a", "-q", "--filter", f"label=pyfreight.owner-pid={pid}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return proc.stdout.split()


def _container_names(pid: int) -> list[str]:
    proc = subprocess.run(
        ["docker", "ps", "-a", "--format", "{{.Names}}", "--filter", f"label=pyfreight.owner-pid={pid}"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    return proc.stdout.split()


def _start(root: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [str(PYFREIGHT), "deps", "sleepy", "--offline"],
        env=_env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not _containers(proc.pid):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no build container started"
        time.sleep(0.5)
    time.sleep(2)  # the build is running inside
    return proc


def _left_behind(root: Path) -> list[str]:
    scratch = root / "build" / "tmp"
    staging = [p.name for p in scratch.iterdir()] if scratch.is_dir() else []
    artifacts = [p.name for p in (root / "build").glob("sleepy-*")]
    return staging + artifacts


@pytest.mark.parametrize(
    ("how", "code"),
    [("ctrl-c", 130), ("sigterm", 143)],
)
def test_interrupt_stops_the_build_and_keeps_nothing(tmp_path, how, code):
    _recipe(tmp_path, SLOW)
    proc = _start(tmp_path)
    started = time.monotonic()
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # the whole foreground group, like a terminal
    else:
        os.kill(proc.pid, signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, out + err
    assert time.monotonic() - started < 60
    assert "Traceback" not in err and "interrupted" in err
    assert _containers(proc.pid) == []
    assert _left_behind(tmp_path) == []


def _watchdog_of(pid: int) -> int:
    found = subprocess.run(
        ["pgrep", "-f", f"pyfreight.container.watchdog {pid}$"], capture_output=True, text=True
    ).stdout.split()
    assert len(found) == 1, f"driver {pid} has {len(found)} watchdogs"
    return int(found[0])


def _gone_within(pid: int, seconds: float) -> float:
    """How long the containers of driver `pid` took to go; fails after `seconds`."""
    started = time.monotonic()
    while _containers(pid):
        assert time.monotonic() - started < seconds, f"driver {pid}'s container still runs"
        time.sleep(0.5)
    return time.monotonic() - started


def test_a_killed_drivers_container_is_ended_by_its_watchdog(tmp_path):
    _recipe(tmp_path, SLOW)
    proc = _start(tmp_path)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    _gone_within(proc.pid, 30)
    assert _left_behind(tmp_path), "a SIGKILLed driver cannot remove its staging folder"


def test_a_killed_run_whose_watchdog_was_killed_too_is_swept_by_the_next(tmp_path):
    _recipe(tmp_path, SLOW)
    proc = _start(tmp_path)
    os.kill(_watchdog_of(proc.pid), signal.SIGKILL)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    orphans = _containers(proc.pid)
    assert orphans, "with driver and watchdog killed, nothing stops the container but the next run"
    assert _left_behind(tmp_path), "nor remove its staging folder"

    _recipe(tmp_path, QUICK)  # the next run: a changed recipe, so it builds
    again = subprocess.run(
        [str(PYFREIGHT), "deps", "sleepy", "--offline"], env=_env(tmp_path), capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert "left by a run that was killed" in again.stderr
    assert _containers(proc.pid) == []
    assert sorted(_left_behind(tmp_path)) == ["sleepy-1.0-x86_64-unknown-linux-gnu.json",
                                              "sleepy-1.0-x86_64-unknown-linux-gnu.tar"]  # fmt: skip


def test_a_build_killed_during_the_cpython_step_leaves_no_container(noopt_dist, tmp_path):
    """`pyfreight build` killed outright while CPython builds in its container (the
    dependencies of the session's noopt build, linked into a build folder of its own,
    where CPython is not built yet): its watchdog removes the container within 30 s."""
    build = linked_build_folder(tmp_path / "build", keep=lambda name: not name.startswith("cpython-"))
    proc = subprocess.Popen(
        [str(PYFREIGHT), "build", "--python", "3.14", "--options", "noopt", "--no-dist"],
        env={**os.environ, "PYFREIGHT_BUILD_DIR": str(build)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + 300
    while not any(name.startswith("pyfreight-cpython-") for name in _container_names(proc.pid)):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no CPython build container started"
        time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate(timeout=60)
    _gone_within(proc.pid, 30)
