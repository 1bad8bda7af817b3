"""A C library built from source into a target's sysroot (targets/*.yaml
`toolchain.sysroot.libc_recipe`), for C libraries Debian's pinned packages do not give: musl.

The recipe (libc-recipes/<name>/, in the recipe format: pinned sources, build.sh) runs in the
target's own build image with only the Debian part of its sysroot (images.py): a C
library builds itself freestanding, and links the compiler runtime of its architecture.
Its install goes into the sysroot's usr/, and its loader is linked at lib/<loader>
(targets/*.yaml `elf.loader`), where the target's programs ask for it."""

from __future__ import annotations

import shutil
from pathlib import Path

from pyfreight.container.build_image import BuildImage
from pyfreight.container.build_job import BuildJob, run_build_job
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import walk_sorted
from pyfreight.hashing import file_sha256
from pyfreight.logs import say
from pyfreight.paths import REPO_ROOT, Workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.sources.recipes import Recipe, load_recipe
from pyfreight.targets import Target
from pyfreight.toolchain import default_jobs

LIBC_RECIPES_DIR = REPO_ROOT / "libc-recipes"
# The build of a C library is small; its epoch is fixed, the sysroot tarball's is 0.
EPOCH = 0


def libc_folder_recipe(name: str, target: Target, field: str) -> Recipe:
    folder = LIBC_RECIPES_DIR / name
    if not folder.is_dir():
        raise PyfreightError(
            f"targets/{target.triple}.yaml: {field} {name!r} is not a folder of libc-recipes/"
        )
    return load_recipe(folder)


def recipe_digest(recipe: Recipe) -> dict[str, object]:
    """What of a platform recipe decides what is made of it: part of cache keys."""
    files = {p.relative_to(recipe.directory).as_posix(): file_sha256(p) for p in recipe.files()}
    return {"name": recipe.name, "files": files, "sources": [s.sha256 for s in recipe.sources]}


def libc_recipe(target: Target) -> Recipe | None:
    name = target.toolchain.sysroot.get("libc_recipe")
    return None if name is None else libc_folder_recipe(name, target, "sysroot.libc_recipe")


def libc_digest(target: Target) -> dict[str, object] | None:
    recipe = libc_recipe(target)
    if recipe is None:
        return None
    digest = recipe_digest(recipe)
    digest.pop("name")  # as the first sysroots were keyed
    return digest


def build_libc_recipe(recipe: Recipe, image: BuildImage, target: Target, ws: Workspace, dest: Path) -> None:
    """Builds `recipe` for `target` in `image` and copies what it installed into
    `dest` (created)."""
    for source in recipe.sources:
        fetch_source(source, ws.downloads, log=say)
    log = ws.logs / f"{recipe.name}-{recipe.version}-{target.triple}-platform.log"
    say(f"  {recipe.name} {recipe.version} for {target.triple} (log: {log})")
    job = BuildJob.from_recipe(recipe, {})
    with run_build_job(job, image, target, default_jobs(), EPOCH, ws, log) as finished:
        shutil.copytree(finished.prefix, dest, symlinks=True)


def build_libc_into(target: Target, ws: Workspace, dest: Path, image: BuildImage) -> list[tuple[str, Path]]:
    """Builds the target's C library in `image` (the build machine's) and lays it out
    under `dest` as the sysroot has it; returns the sysroot members (name, path)."""
    recipe = libc_recipe(target)
    assert recipe is not None
    build_libc_recipe(recipe, image, target, ws, dest / "usr")
    loader = dest / "usr" / "lib" / target.elf.loader
    if not loader.is_symlink() and not loader.is_file():
        raise PyfreightError(f"{recipe.name}: its build installed no lib/{target.elf.loader}")
    (dest / "lib").mkdir()
    (dest / "lib" / target.elf.loader).symlink_to(f"../usr/lib/{target.elf.loader}")
    return [(name, dest / name) for name in walk_sorted(dest)]
