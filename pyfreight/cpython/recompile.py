"""Compiles again the stdlib files that relocation rewrote (pyfreight.cpython.relocate):
`make install` compiled them before, so their .pyc would hold the build's paths and not
match the text beside them (the interpreter would never use it). The tree's own
interpreter compiles them, in the image check-install uses for the target (its
emulator for a foreign one), as `make install` did: checked-hash, every optimization
level, at the install prefix, one process."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.options import INSTALL_PREFIX
from pyfreight.paths import Workspace
from pyfreight.runners import runner_for
from pyfreight.targets import Target


def compile_command(python: str, sources: Sequence[PurePosixPath]) -> list[str]:
    """compileall of `sources` (paths as the container sees them) by `python`."""
    args = [python, "-E", "-m", "compileall", "-q", "-j1", "--invalidation-mode", "checked-hash"]
    return [*args, "-o", "0", "-o", "1", "-o", "2", *map(str, sources)]


def recompile(
    tree: Path,
    sources: Sequence[Path],
    target: Target,
    ws: Workspace,
    log: Path,
    build_python: Path | None = None,
) -> None:
    """Recompiles `sources` (files of `tree`) in place, mounted where it was installed so
    the code objects name the same paths as every other .pyc of the tree. The tree's own
    interpreter compiles them, or, for a target whose programs cannot run here, the
    build python of the same version (its tree `build_python`)."""
    if not sources:
        return
    inside = PurePosixPath(INSTALL_PREFIX)
    compiler = runner_for(target).bytecode_compiler(ws, tree, INSTALL_PREFIX, build_python)
    spec = RunSpec(
        image=compiler.image,
        command=compile_command(compiler.python, [inside / s.relative_to(tree) for s in sources]),
        what="compileall of the relocated files",
        output=log,
        mounts=[Mount(tree, INSTALL_PREFIX, read_only=False), *compiler.mounts],
        env={"PYTHONHASHSEED": "0"},
        user=f"{os.getuid()}:{os.getgid()}",  # the files stay the caller's
        name_hint="recompile",
    )
    run(spec)
