"""Running a bash script in one of our images, as the tests' own user, with no network
and one host folder mounted at /p (the working folder)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


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
