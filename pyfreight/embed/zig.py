"""The pinned zig of a target whose sysroot is zig (Windows and macOS), on this machine,
for `pyfreight embed`: the compiler and linker the archive was built with, so linking a
Windows or macOS interpreter needs nothing installed but binutils (whose ar and nm
read COFF) or LLVM's (Mach-O).
The wheel is fetched and verified by sha256 like every source, unpacked once below the
workspace's tools folder, and zig's caches are kept there too: it would write to
~/.cache otherwise, and it compiles the C runtime's start-up code into them once."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pyfreight.container.zig_sysroot import overlay_folder, patch_files, patches_digest, unpack_zig
from pyfreight.cpython.windows_projects import load_settings
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import Target


@dataclass(frozen=True)
class PinnedCompiler:
    command: tuple[str, ...]  # zig cc -target TRIPLE
    env: dict[str, str] = field(default_factory=dict)  # zig's cache folders
    library_names: dict[str, str] = field(default_factory=dict)  # Windows' name -> mingw-w64's
    link_flags: tuple[str, ...] = ()  # what every link with it needs (macOS: our framework stubs)


def pinned_zig(target: Target, ws: Workspace) -> PinnedCompiler:
    """`zig cc` for `target` from its pinned wheel, unpacked below ws's tools folder
    (under a temporary name first, so an interrupted unpack is never used)."""
    if target.toolchain.zig is None:
        raise PyfreightError(f"{target.triple} has no pinned zig (targets/{target.triple}.yaml sysroot.zig)")
    tools = ws.build / "tools"
    # Named by the wheel and the patches to its sources, so that a zig unpacked before a
    # patch was added is not taken for the patched one.
    patched = patches_digest(target.toolchain.sysroot)
    home = tools / f"zig-{target.toolchain.zig.sha256[:16]}{'-' + patched[:8] if patched else ''}"
    if not (home / "zig").is_file():
        wheel = fetch_source(target.toolchain.zig, ws.downloads, log=say)
        tools.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=tools, prefix=owned("zig")) as tmp:
            say(f"embed: unpacking {target.toolchain.zig.file} into {home}")
            unpack_zig(wheel, Path(tmp) / "zig", patch_files(target.toolchain.sysroot))
            shutil.rmtree(home, ignore_errors=True)
            os.replace(Path(tmp) / "zig", home)
    cache = str(tools / "zig-cache")
    # The import libraries mingw-w64 names otherwise than Windows does, as the Windows
    # build links them (windows/projects.yaml `libraries`: pathcch).
    renamed = load_settings()["libraries"]
    # A zig sysroot's overlay (macos/: the framework stubs _scproxy links), as the build
    # names it in the target's compiler flags, from this repository.
    overlay = overlay_folder(target.toolchain.sysroot)
    frameworks = () if overlay is None else ("-F", str(overlay / "frameworks"))
    return PinnedCompiler(
        command=(str(home / "zig"), "cc", "-target", target.toolchain.clang_triple),
        # lld stamps a PE image with the link's time unless SOURCE_DATE_EPOCH says one:
        # a fixed stamp, so that the same archive and flags link the same bytes.
        env={"ZIG_GLOBAL_CACHE_DIR": cache, "ZIG_LOCAL_CACHE_DIR": cache, "SOURCE_DATE_EPOCH": "0"},
        library_names={k: v for k, v in renamed.items() if k in target.libc.system_libraries},
        link_flags=frameworks,
    )
