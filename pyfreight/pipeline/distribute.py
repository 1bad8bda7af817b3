"""Build → check → pack: the one way from a build's spec to its archives, for the
command line, bench, reproduce and the tests. CPython is built (or reused), its tree
checked by check-install before anything is packed (unless the caller says not to),
then the three archives written, each judged by `pyfreight validate` under its
temporary name before it takes its own."""

from __future__ import annotations

from pathlib import Path

from pyfreight.archives.write import WrittenArchives, write_distribution
from pyfreight.cpython.build import CPythonBuild, build_cpython
from pyfreight.cpython.profiles import SavedProfiles
from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.paths import Workspace
from pyfreight.verify.check_install import check_build
from pyfreight.verify.validate import RefuseInvalid


def build_checked(
    spec: BuildSpec,
    ws: Workspace,
    jobs: int,
    *,
    force: bool = False,
    profiles: SavedProfiles | None = None,
    check: bool = True,
) -> CPythonBuild:
    """The build of `spec` (built or reused), its tree checked unless `check` is off."""
    build = build_cpython(spec, ws, jobs=jobs, force=force, profiles=profiles)
    if check and not check_build(build, ws):
        raise PyfreightError(f"{build.tree}: the install tree failed checks (see above)")
    return build


def distribute(
    spec: BuildSpec,
    ws: Workspace,
    jobs: int,
    *,
    dist: Path | None = None,
    release: str | None = None,
    force: bool = False,
    profiles: SavedProfiles | None = None,
    check: bool = True,
) -> tuple[CPythonBuild, WrittenArchives]:
    """The build (checked unless `check` is off) and its three archives, written to
    `dist` (default: the workspace's) or reused."""
    build = build_checked(spec, ws, jobs, force=force, profiles=profiles, check=check)
    written = write_distribution(
        build, ws, ws.dist if dist is None else dist, RefuseInvalid(ws), release=release
    )
    return build, written
