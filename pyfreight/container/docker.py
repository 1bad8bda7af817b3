"""The docker engine and image queries, and logged host commands (debootstrap, docker
build and import). Containers run through pyfreight.container.run alone."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from pyfreight.errors import PyfreightError
from pyfreight.logs import tail

# The legacy builder needs no buildx plugin and no registry access.
DOCKER_ENV = {**os.environ, "DOCKER_BUILDKIT": "0"}


def engine_available() -> bool:
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def require_engine() -> None:
    if not engine_available():
        raise PyfreightError(
            "no Docker engine answers 'docker info'; run scripts/setup.sh (as root on Debian it "
            "installs docker.io and starts dockerd) or start Docker yourself"
        )


def run_logged(args: Sequence[str], log: Path, what: str, stdin: IO[bytes] | None = None) -> None:
    """Runs a command with stdout and stderr appended to `log`; on failure raises with
    the last 50 lines of the log and its path."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as fh:
        fh.write(f"$ {' '.join(args)}\n".encode())
        fh.flush()
        proc = subprocess.run(args, stdout=fh, stderr=subprocess.STDOUT, stdin=stdin, env=DOCKER_ENV)
    if proc.returncode != 0:
        raise PyfreightError(f"{what} failed (exit {proc.returncode}); last lines of {log}:\n{tail(log, 50)}")


def import_rootfs(
    rootfs: Path, tag: str, env: Mapping[str, str], log: Path, tar_options: Sequence[str] = ()
) -> None:
    """`docker import`s the folder `rootfs` as the image `tag`, whose containers start
    with `env`; `tar_options` shape the tar stream (owners, order)."""
    tar = subprocess.Popen(["tar", "-C", str(rootfs), *tar_options, "-c", "."], stdout=subprocess.PIPE)
    changes = [x for k, v in sorted(env.items()) for x in ("--change", f"ENV {k}={v}")]
    run_logged(["docker", "import", *changes, "-", tag], log, f"docker import {tag}", stdin=tar.stdout)
    if tar.wait() != 0:
        raise PyfreightError(f"tar of {rootfs} for {tag} failed; see {log}")


def image_id(tag: str) -> str | None:
    """The image id of `tag`, or None when no such image exists here."""
    proc = subprocess.run(
        ["docker", "image", "inspect", "--format", "{{.Id}}", tag],
        capture_output=True,
        text=True,
        env=DOCKER_ENV,
    )
    return proc.stdout.strip() if proc.returncode == 0 else None


def remove_container(name: str) -> None:
    subprocess.run(["docker", "rm", "-f", name], capture_output=True, env=DOCKER_ENV)
