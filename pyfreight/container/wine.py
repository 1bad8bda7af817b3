"""Running a Windows target's programs here: under Wine, in the target's runtime image
(targets/*.yaml `run: wine`), with no network, as the image's unprivileged user that owns
the Wine prefix made when the image was built."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pyfreight.container.images import ensure_runtime_image
from pyfreight.container.run import Mount, Output, RunResult, RunSpec, run
from pyfreight.paths import Workspace
from pyfreight.targets import Target

WINE = "wine64"  # on PATH in the runtime image (dockerfiles/wine-runtime.Dockerfile)
RUNNER = "1000:1000"  # the image's `runner`, owner of the Wine prefix
FOLDER = "/work"  # where the folder holding the program is mounted (Wine's Z:\work)
# Wine has built-in copies of Microsoft's Visual C++ runtime, which a clean Windows does
# not: with them every MSVC-built wheel would load here and fail on a user's machine.
# Native only ("n"): a program finds these beside itself (the tree ships them,
# targets/*.yaml pe.redistributed) or fails as it would on Windows.
CLEAN_WINDOWS_DLLS = "vcruntime140=n;vcruntime140_1=n;msvcp140=n"
# Wine's C: drive in the runtime image (its WINEPREFIX, dockerfiles/wine-runtime.Dockerfile):
# a folder mounted below it is C:\NAME to the program.
C_DRIVE = "/home/runner/.wine/drive_c"


def wine_path(mounted_at: str, relative: str) -> str:
    """The Windows name of `relative` below a folder mounted at `mounted_at`: Wine shows
    the container's files on drive Z: (and what is below C_DRIVE on C:)."""
    unix = f"{mounted_at}/{relative}"
    if unix.startswith(C_DRIVE + "/"):
        return "C:" + unix[len(C_DRIVE) :].replace("/", "\\")
    return "Z:" + unix.replace("/", "\\")


def run_windows_program(
    target: Target,
    ws: Workspace,
    folder: Path,
    program: str,
    arguments: Sequence[str] = (),
    what: str = "",
    check: bool = True,
    output: Output = "capture",
    mount_at: str = FOLDER,
    mounts: Sequence[Mount] = (),
    env: Mapping[str, str] | None = None,
    writable: bool = False,
) -> RunResult:
    """Runs `folder`/`program` (a path relative to `folder`, which is mounted read-only,
    or with `writable` writable, at `mount_at`, with `mounts` beside it) with `arguments`
    and `env` under Wine, in `folder`; returns what it printed (`output` "capture"), or
    shows it as it comes ("terminal") or appends it to a log."""
    image = ensure_runtime_image(ws, target)
    spec = RunSpec(
        image=image,
        command=[WINE, f"{mount_at}/{program}", *arguments],
        what=what or f"{program} under Wine",
        output=output,
        mounts=[Mount(folder, mount_at, read_only=not writable), *mounts],
        # Wine names Unix files in the locale's encoding: in the default C locale, a
        # Windows name with a letter beyond ASCII (as CPython's tests make) cannot exist.
        env={"LC_ALL": "C.UTF-8", **(env or {}), "WINEDLLOVERRIDES": CLEAN_WINDOWS_DLLS},
        user=RUNNER,
        workdir=mount_at,
        name_hint="wine",
    )
    return run(spec, check=check)
