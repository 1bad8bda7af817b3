"""The sysroot of a target built with zig (Windows): the pinned `ziglang` wheel's zig,
unpacked as `zig/` of the sysroot tarball, with our patches to its sources (zig-patches/,
targets/*.yaml `toolchain.sysroot.patches`). zig is compiler, linker, headers (mingw-w64's) and
the sources of the C runtime's start-up code and compiler runtime at once, so nothing
else goes in."""

from __future__ import annotations

import stat
import subprocess
import tempfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import walk_sorted, write_tar
from pyfreight.hashing import file_sha256, text_sha256
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import REPO_ROOT, Workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.sources.recipes import Source

WHEEL_FOLDER = "ziglang"  # the package folder inside the wheel: zig and its lib/
# $CC and $CXX: zig's cc and c++ naming objects as Unix makefiles expect (bin/zig-cc, zig-c++)
DRIVER = Path(__file__).with_name("zig-cc.sh")
DRIVER_NAMES = ("zig-cc", "zig-c++")


def overlay_folder(sysroot: Mapping[str, Any]) -> Path | None:
    """The repository folder a target's zig sysroot carries beside zig (`overlay`)."""
    name = sysroot.get("overlay")
    return None if name is None else REPO_ROOT / name


def patch_files(sysroot: Mapping[str, Any]) -> list[Path]:
    """The patches a target's zig sysroot applies to zig's sources, in order."""
    return [REPO_ROOT / name for name in sysroot.get("patches", [])]


def patches_digest(sysroot: Mapping[str, Any]) -> str:
    """One hash of the patches' names and contents ("" for none): a zig unpacked with
    other patches is another zig."""
    patches = patch_files(sysroot)
    if not patches:
        return ""
    return text_sha256(" ".join(f"{p.name}:{file_sha256(p)}" for p in patches))


def overlay_digest_parts(sysroot: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Every file of the overlay with its content hash, for the sysroot's digest."""
    folder = overlay_folder(sysroot)
    if folder is None:
        return []
    return [(rel, file_sha256(folder / rel)) for rel in walk_sorted(folder) if (folder / rel).is_file()]


def write_sysroot(
    wheel: Source, ws: Workspace, out: Path, overlay: Path | None = None, patches: Sequence[Path] = ()
) -> None:
    """Fetches and verifies `wheel`, and writes its zig, with `patches` applied, as the
    sysroot tarball `out`, with the repository folder `overlay` (macos/: our own headers
    and framework stubs) beside it under its own name."""
    say(f"sysroot: zig from {wheel.file}")
    cached = fetch_source(wheel, ws.downloads)
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("zig")) as tmp:
        root = Path(tmp) / "zig"
        unpack_zig(cached, root, patches)
        if not (root / "zig").is_file():
            raise PyfreightError(f"{wheel.file}: holds no {WHEEL_FOLDER}/zig; is the pin a ziglang wheel?")
        members = [("zig", root)] + [(f"zig/{rel}", root / rel) for rel in walk_sorted(root)]
        bin_dir = Path(tmp) / "bin"
        bin_dir.mkdir()
        members.append(("bin", bin_dir))
        for name in DRIVER_NAMES:
            (bin_dir / name).write_bytes(DRIVER.read_bytes())
            (bin_dir / name).chmod(0o755)
            members.append((f"bin/{name}", bin_dir / name))
        if overlay is not None:
            members.append((overlay.name, overlay))
            members += [(f"{overlay.name}/{rel}", overlay / rel) for rel in walk_sorted(overlay)]
        write_tar(out, members, epoch=0)


def unpack_zig(wheel: Path, dest: Path, patches: Sequence[Path] = ()) -> None:
    """The wheel's ziglang/ folder into `dest`, with the executable bits the wheel
    records (a zip keeps Unix modes in its external attributes); no member may leave it.
    Then `patches` are applied to it, each of which must apply whole."""
    prefix = f"{WHEEL_FOLDER}/"
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if not info.filename.startswith(prefix) or info.is_dir():
                continue
            relative = Path(info.filename[len(prefix) :])
            if relative.is_absolute() or ".." in relative.parts:
                raise PyfreightError(f"{wheel.name}: member {info.filename} leaves its folder")
            path = dest / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as src, path.open("wb") as out:
                while chunk := src.read(1 << 20):
                    out.write(chunk)
            executable = (info.external_attr >> 16) & stat.S_IXUSR
            path.chmod(0o755 if executable else 0o644)
    for patch in patches:
        _apply_patch(patch, dest)


def _apply_patch(patch: Path, tree: Path) -> None:
    """GNU patch of `patch` (paths a/... b/...) in `tree`; one that does not apply cleanly
    (another zig than it was made for) stops with patch's own words."""
    result = subprocess.run(
        [
            "patch",
            "-p1",
            "--batch",
            "--forward",
            "--no-backup-if-mismatch",
            "-d",
            str(tree),
            "-i",
            str(patch),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        detail = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
        raise PyfreightError(
            f"zig-patches/{patch.name} does not apply to the pinned zig ({detail[0]}): "
            "remake it for this zig, or drop it from the target's sysroot.patches"
        )
