"""The sysroot of a target built with zig (Windows): the pinned `ziglang` wheel's zig,
unpacked as `zig/` of the sysroot tarball. zig is compiler, linker, headers (mingw-w64's)
and the sources of the C runtime's start-up code at once, so nothing else goes in."""

from __future__ import annotations

import stat
import tempfile
import zipfile
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import walk_sorted, write_tar
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.sources.recipes import Source

WHEEL_FOLDER = "ziglang"  # the package folder inside the wheel: zig and its lib/
# $CC and $CXX: zig's cc and c++ naming objects as Unix makefiles expect (bin/zig-cc, zig-c++)
DRIVER = Path(__file__).with_name("zig-cc.sh")
DRIVER_NAMES = ("zig-cc", "zig-c++")


def write_sysroot(wheel: Source, ws: Workspace, out: Path) -> None:
    """Fetches and verifies `wheel`, and writes its zig as the sysroot tarball `out`."""
    say(f"sysroot: zig from {wheel.file}")
    cached = fetch_source(wheel, ws.downloads)
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("zig")) as tmp:
        root = Path(tmp) / "zig"
        unpack_zig(cached, root)
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
        write_tar(out, members, epoch=0)


def unpack_zig(wheel: Path, dest: Path) -> None:
    """The wheel's ziglang/ folder into `dest`, with the executable bits the wheel
    records (a zip keeps Unix modes in its external attributes); no member may leave it."""
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
