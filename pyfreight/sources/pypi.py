"""Pinned wheels from the package index pip is configured with.

pip knows the machine's index (its configuration, PIP_INDEX_URL): nothing here names a
registry. The wheel lands in a private folder and is checked against its pin by the
caller before anything trusts it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.sources.recipes import Source


def wheel_platforms(file: str) -> list[str]:
    """The platform tags a wheel's file name carries (`name-ver-py-abi-PLAT.whl`,
    PLAT dot-separated), which pip download is told so that it picks that file."""
    parts = file.removesuffix(".whl").split("-")
    if not file.endswith(".whl") or len(parts) < 5:
        raise PyfreightError(f"{file}: not a wheel's file name (name-version-python-abi-platform.whl)")
    return parts[-1].split(".")


def wheel_interpreter(file: str) -> list[str]:
    """pip download's options for the interpreter a CPython-specific wheel's name says
    (`cp314-cp314`: CPython 3.14 and its ABI), so that pip picks that file whatever
    Python runs pip; none for a wheel of any Python (`py3-none`)."""
    python, abi = file.removesuffix(".whl").split("-")[-3:-1]
    match = re.fullmatch(r"cp(3)(\d+)", python)
    if match is None:
        return []
    return ["--implementation", "cp", "--python-version", f"{match[1]}.{match[2]}", "--abi", abi]


def download_wheel(source: Source, folder: Path, timeout_s: float) -> Path:
    """pip downloads the pinned wheel `source` into `folder` and returns its path."""
    assert source.pypi is not None
    command = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:"]
    command += [arg for tag in wheel_platforms(source.file) for arg in ("--platform", tag)]
    command += wheel_interpreter(source.file)
    command += ["--dest", str(folder), f"{source.pypi.project}=={source.pypi.version}"]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        raise OSError(f"pip download took over {timeout_s:.0f} s") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise OSError(f"pip download failed: {last}")
    found = folder / source.file
    if not found.is_file():
        names = ", ".join(sorted(p.name for p in folder.iterdir())) or "nothing"
        raise OSError(f"pip download gave {names}, not {source.file}")
    return found
