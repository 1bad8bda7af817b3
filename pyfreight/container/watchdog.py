"""Ends the containers of a driver that was killed outright.

A driver stopped by a signal it can catch removes its containers itself (container/run).
One killed with SIGKILL (a test's timeout, the OOM killer) cannot: its docker client goes
on, and the engine keeps the container running. So the first container a driver starts
also starts this watchdog, in a session of its own (a kill of the driver's process group
does not reach it), which waits for the driver to end and then removes every container
labelled with the driver's pid. After a driver that ended normally it finds none.

    python -m pyfreight.container.watchdog PID"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time

from pyfreight.container import docker
from pyfreight.leftovers import alive

OWNER_LABEL = "pyfreight.owner-pid"
# A docker client the driver left may still be creating its container when the driver
# dies: the watchdog looks again until it has seen none this many times in a row.
QUIET_LOOKS = 3
LOOK_EVERY = 1.0  # seconds


def start(owner: int) -> None:
    """Starts the watchdog of `owner`, detached: no terminal, no pipe of ours held open
    (a caller reading the driver's output would wait for the watchdog too)."""
    subprocess.Popen(
        [sys.executable, "-m", "pyfreight.container.watchdog", str(owner)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def containers_of(owner: int) -> list[str]:
    proc = subprocess.run(
        ["docker", "ps", "-a", "-q", "--filter", f"label={OWNER_LABEL}={owner}"],
        capture_output=True,
        text=True,
        env=docker.DOCKER_ENV,
    )
    return proc.stdout.split()


def _wait_for_end(pid: int) -> None:
    """Returns once `pid` has ended: woken by the kernel through a pidfd (which, unlike
    polling a pid, cannot mistake a new process given the same pid for the driver)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except (OSError, AttributeError):  # a kernel before 5.3: poll
        while alive(pid):
            time.sleep(LOOK_EVERY)
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def main(owner: int) -> None:
    _wait_for_end(owner)
    quiet = 0
    while quiet < QUIET_LOOKS:
        names = containers_of(owner)
        for name in names:
            docker.remove_container(name)
        quiet = 0 if names else quiet + 1
        time.sleep(LOOK_EVERY)


if __name__ == "__main__":
    main(int(sys.argv[1]))
