"""Running the archive's own interpreter on this machine, for the steps of embed that
need it (packing the stdlib compiles it with the interpreter whose bytecode it is):
directly for a Linux archive (natively, or through the emulator binfmt_misc runs it
with), under Wine for a Windows one, in the target's runtime image with no network,
the work folder mounted as the current folder and every other path it is given
mounted read-only beside it."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pyfreight.container.run import Mount
from pyfreight.container.wine import run_windows_program
from pyfreight.paths import Workspace
from pyfreight.python_json import Distribution

# Where a path outside the work folder is seen under Wine (drive Z: is the container's /).
INPUTS = "/pyfreight-inputs"


def run_archive_python(
    archive: Distribution, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
) -> tuple[int, str]:
    """Runs the archive's python_exe with `arguments` (Paths are files or folders; an
    output must be inside `work`); returns its exit status and what it printed on
    stdout; what it printed on stderr goes to `log`."""
    target = archive.build.target
    if not target.under_wine:
        command = [str(archive.python_exe), *map(str, arguments)]
        native = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True, errors="replace")
        return native.returncode, native.stdout
    work = work.resolve()
    mounts: list[Mount] = []
    words: list[str] = []
    for argument in arguments:
        if not isinstance(argument, Path):
            words.append(argument)
            continue
        path = argument.resolve()
        if path.is_relative_to(work):
            words.append(path.relative_to(work).as_posix() or ".")
            continue
        inside = f"{INPUTS}/{len(mounts)}"
        if path.is_dir():
            mounts.append(Mount(path, inside))
            words.append(inside)
        else:
            mounts.append(Mount(path.parent, inside))
            words.append(f"{inside}/{path.name}")
    # Wine runs as the runtime image's user, which writes its output into the work folder.
    mode = work.stat().st_mode & 0o7777
    work.chmod(0o777)
    try:
        result = run_windows_program(
            target,
            ws,
            work,
            archive.python_exe.relative_to(work).as_posix(),
            words,
            what=f"{archive.python_exe.name} of the archive under Wine",
            check=False,
            mounts=mounts,
            writable=True,
        )
    finally:
        work.chmod(mode)
    log.write(result.stderr)
    return result.returncode, result.stdout
