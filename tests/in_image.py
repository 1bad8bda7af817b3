"""Container helpers of the tests: a bash script in one of our images (as the tests'
own user, no network, one host folder mounted at /p), and zlib built from scratch."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

import pytest

from pyfreight.container.build_image import BuildImage
from pyfreight.container.images import ensure_images
from pyfreight.deps.scheduler import DepsResult, build_deps
from pyfreight.paths import Workspace, default_workspace
from pyfreight.targets import Target


def bash_in_image(
    tag: str, folder: Path, script: str, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess[str]:
    flags = [x for k, v in (env or {}).items() for x in ("-e", f"{k}={v}")]
    user = f"{os.getuid()}:{os.getgid()}"
    command = ["docker", "run", "--rm", "--network", "none", "--user", user, *flags, "-v", f"{folder}:/p"]
    proc = subprocess.run(
        [*command, "-w", "/p", tag, "bash", "-euo", "pipefail", "-c", script],
        capture_output=True,
        text=True,
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def zlib_from_scratch(
    target: Target, tmp_path_factory: pytest.TempPathFactory
) -> tuple[BuildImage, DepsResult, Path]:
    """zlib built for `target` in an empty workspace (the verified downloads serve as a
    mirror, verified again), and a folder with its artifact unpacked."""
    image = ensure_images(default_workspace(), target)
    ws = Workspace(tmp_path_factory.mktemp("empty") / "build")
    downloads = default_workspace().downloads
    if downloads.is_dir():
        os.environ["PYFREIGHT_MIRRORS"] = str(downloads)
    built = build_deps(["zlib"], target, ws, jobs=os.cpu_count() or 1)
    prefix = tmp_path_factory.mktemp("prefix")
    with tarfile.open(built.artifacts["zlib"].path) as tar:
        tar.extractall(prefix, filter="tar")
    return image, built, prefix
