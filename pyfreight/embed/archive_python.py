"""Running the archive's own interpreter on this machine, for the steps of embed that
need it (packing the stdlib compiles it with the interpreter whose bytecode it is), the
way its target's runner runs it (runners/): directly for a Linux archive (natively, or
through the emulator binfmt_misc runs it with), under Wine in the target's runtime image
for a Windows one, with the work folder as the current folder and every other path it
is given visible read-only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pyfreight.paths import Workspace
from pyfreight.python_json import Distribution
from pyfreight.runners import runner_for


def run_archive_python(
    archive: Distribution, ws: Workspace, work: Path, arguments: Sequence[str | Path], log: TextIO
) -> tuple[int, str]:
    """Runs the archive's python_exe with `arguments` (Paths are files or folders; an
    output must be inside `work`); returns its exit status and what it printed on
    stdout; what it printed on stderr goes to `log`."""
    runner = runner_for(archive.build.target)
    return runner.run_archive_python(archive.python_exe, ws, work, arguments, log)
