"""A C library built from source into a target's sysroot (targets/*.yaml
`sysroot.libc_recipe`), for C libraries Debian's pinned packages do not give: musl.

The recipe (libc/<name>/, in the recipe format: pinned sources, build.sh) runs in the
build machine's own build image, with the target's compiler: a C library builds
itself freestanding, so the image's sysroot is never read. Its install goes into the
sysroot's usr/, and its loader is linked at lib/<loader> (targets/*.yaml
`elf.loader`), where the target's programs ask for it."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import walk_sorted
from pyfreight.hashing import file_sha256
from pyfreight.logs import say
from pyfreight.paths import REPO_ROOT, Workspace
from pyfreight.sources.recipes import Recipe, load_recipe
from pyfreight.targets import Target

LIBC_DIR = REPO_ROOT / "libc"
# The build of a C library is small; its epoch is fixed, the sysroot tarball's is 0.
EPOCH = 0


def libc_recipe(target: Target) -> Recipe | None:
    name = target.sysroot.get("libc_recipe")
    if name is None:
        return None
    folder = LIBC_DIR / name
    if not folder.is_dir():
        raise PyfreightError(
            f"targets/{target.triple}.yaml: sysroot.libc_recipe {name!r} is not a folder of libc/"
        )
    return load_recipe(folder)


def libc_digest(target: Target) -> dict[str, object] | None:
    """What of the C library recipe decides the sysroot: part of its cache key."""
    recipe = libc_recipe(target)
    if recipe is None:
        return None
    files = {p.relative_to(recipe.directory).as_posix(): file_sha256(p) for p in recipe.files()}
    return {"files": files, "sources": [s.sha256 for s in recipe.sources]}


def build_libc_into(target: Target, ws: Workspace, dest: Path) -> list[tuple[str, Path]]:
    """Builds the target's C library and lays it out under `dest` as the sysroot has
    it; returns the sysroot members (name, path) it adds."""
    # Imported here: the build machinery itself needs the images module.
    from pyfreight.container.images import ensure_images
    from pyfreight.deps.container_build import run_build_job
    from pyfreight.deps.recipe_build import recipe_job
    from pyfreight.sources.fetch import fetch_source
    from pyfreight.targets import build_machine_target
    from pyfreight.toolchain import default_jobs

    recipe = libc_recipe(target)
    assert recipe is not None
    for source in recipe.sources:
        fetch_source(source, ws.downloads, log=say)
    image = ensure_images(ws, build_machine_target())
    log = ws.logs / f"{recipe.name}-{recipe.version}-{target.triple}-sysroot.log"
    say(f"  {recipe.name} {recipe.version} for the {target.triple} sysroot (log: {log})")
    job = recipe_job(recipe, {})
    with run_build_job(job, image, target, default_jobs(), EPOCH, ws, log) as finished:
        shutil.copytree(finished.prefix, dest / "usr", symlinks=True)
    loader = dest / "usr" / "lib" / target.loader
    if not loader.is_symlink() and not loader.is_file():
        raise PyfreightError(f"{recipe.name}: its build installed no lib/{target.loader} (see {log})")
    (dest / "lib").mkdir()
    (dest / "lib" / target.loader).symlink_to(f"../usr/lib/{target.loader}")
    return [(name, dest / name) for name in walk_sorted(dest)]
