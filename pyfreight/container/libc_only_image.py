"""The runtime image of a target no Debian image can stand for (musl, whose programs
would find glibc everywhere in Debian): nothing but the target's own loader and C
library from its sysroot, and a shell and tools built for the target
(targets/*.yaml `libc.runtime_tools`, a recipe of libc-recipes/: busybox), so that installs are
checked where there is no glibc at all."""

from __future__ import annotations

import posixpath
import shutil
import tarfile
import tempfile
from pathlib import Path

from pyfreight.container import docker, libc_sysroot
from pyfreight.container.build_image import BuildImage
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.targets import Target

# What programs and CPython's tests expect of any Linux root: users, a writable /tmp.
ETC_FILES = {
    "etc/passwd": "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n",
    "etc/group": "root:x:0:\nnogroup:x:65534:\n",
}
EMPTY_DIRS = {"root": 0o700, "tmp": 0o1777, "usr/local/bin": 0o755}


def _sysroot_file(sysroot_tar: Path, name: str) -> bytes:
    """A file of the sysroot tarball by name, its symlinks followed inside it."""
    with tarfile.open(sysroot_tar) as tar:
        for _ in range(16):
            member = tar.getmember(name)
            if not member.issym():
                data = tar.extractfile(member)
                if data is None:
                    raise PyfreightError(f"{sysroot_tar.name}: {name} is not a file")
                return data.read()
            name = posixpath.normpath(posixpath.join(posixpath.dirname(name), member.linkname))
    raise PyfreightError(f"{sysroot_tar.name}: too many symlinks at {name}")


def ensure_libc_only_image(
    tag: str, target: Target, ws: Workspace, sysroot_tar: Path, image: BuildImage
) -> str:
    """The image `tag`, made if missing; the tools are built in `image` (the target's)."""
    if docker.image_id(tag):
        return tag
    assert target.libc.runtime_tools is not None
    recipe = libc_sysroot.libc_folder_recipe(target.libc.runtime_tools, target, "runtime_tools")
    say(f"image {tag}: building (no glibc: {target.elf.loader} and {recipe.name})")
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("rootfs")) as tmp:
        rootfs = Path(tmp) / "rootfs"
        libc_sysroot.build_libc_recipe(recipe, image, target, ws, rootfs)
        shutil.rmtree(rootfs / "share", ignore_errors=True)  # the tools' licenses: not needed here
        loader = rootfs / "lib" / target.elf.loader
        loader.parent.mkdir(exist_ok=True)
        loader.write_bytes(_sysroot_file(sysroot_tar, f"lib/{target.elf.loader}"))
        loader.chmod(0o755)
        for name, text in ETC_FILES.items():
            (rootfs / name).parent.mkdir(parents=True, exist_ok=True)
            (rootfs / name).write_text(text)
        for name, mode in EMPTY_DIRS.items():
            (rootfs / name).mkdir(parents=True, exist_ok=True)
            (rootfs / name).chmod(mode)
        # tar keeps the modes (/tmp's sticky bit); the owner is root, as in any rootfs.
        log = ws.logs / f"image-{tag.replace(':', '-')}.log"
        docker.import_rootfs(rootfs, tag, target.emulator_env, log, ["--owner=0", "--group=0", "--sort=name"])
    return tag
