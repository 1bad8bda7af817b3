"""The host's C compiler, archiver and linker for `pyfreight embed`.

ELF archives (noopt, pgo, debug) link with any gcc or clang and the system linker.
COFF archives (Windows) link with a compiler for Windows: by default the target's
pinned zig (embed/zig.py); binutils' ar and nm read their objects.
LTO archives hold LLVM bitcode (object_file_format "llvm-bitcode:N"): only an LLVM
linker of version N or newer can read it, so we link those with ld.lld whatever the
compiler driver (gcc or clang) is, and archive them with llvm-ar, which indexes
bitcode symbols. A Windows LTO archive is the pinned zig's bitcode and links with that
same zig (its own lld); llvm-ar and llvm-nm of its LLVM or newer read its symbols."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from pyfreight.embed.zig import PinnedCompiler
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.platforms import LINUX, NATIVE_OBJECT_FORMATS, Platform
from pyfreight.toolchain import LLVM


@dataclass(frozen=True)
class HostToolchain:
    cc: tuple[str, ...]  # the compiler driver, with any arguments the user gave in --cc or CC
    cc_description: str  # first line of `cc --version`
    ar: str
    nm: str
    bitcode_llvm: str | None = None  # LLVM major version when the objects are bitcode
    lld_dir: Path | None = None  # a folder holding an `ld.lld` for -B / -fuse-ld=lld
    link_flags: tuple[str, ...] = field(default=())
    object_format: str = "elf"  # "elf", "coff" or "llvm-bitcode:N" (PYTHON.json's)
    platform: Platform = LINUX  # the OS of what it links (the archive's target's)
    env: dict[str, str] = field(default_factory=dict)  # for every tool run, beside os.environ
    library_names: dict[str, str] = field(default_factory=dict)  # -l names this compiler spells otherwise

    def describe(self) -> str:
        linker = f", ld.lld from LLVM {self.bitcode_llvm}" if self.bitcode_llvm else ""
        return f"{self.cc_description} ({self.cc[0]}){linker}, {self.ar}"


def bitcode_version(object_file_format: str) -> str | None:
    """'llvm-bitcode:22' -> '22'; 'elf' or 'coff' -> None. Anything else is refused by name."""
    if object_file_format in NATIVE_OBJECT_FORMATS:
        return None
    match = re.fullmatch(r"llvm-bitcode:(\d+)", object_file_format)
    if not match:
        raise PyfreightError(
            f"PYTHON.json object_file_format {object_file_format!r} is not one embed knows "
            "(elf, coff, mach-o or llvm-bitcode:N); is the archive from a newer pyfreight?"
        )
    return match.group(1)


def _version_line(command: list[str], env: dict[str, str]) -> str:
    # In a folder of its own: the pinned zig's `cc --version` for a macOS target also
    # writes an empty a.o into its working folder, which is the user's.
    try:
        with tempfile.TemporaryDirectory(prefix=owned("version")) as folder:
            out = subprocess.run(
                [*command, "--version"],
                capture_output=True,
                text=True,
                check=True,
                env={**os.environ, **env},
                cwd=folder,
            ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        raise PyfreightError(f"{' '.join(command)} --version failed ({exc}); pass a working --cc") from exc
    return out.splitlines()[0].strip() if out else command[0]


def _llvm_tool(name: str, major: str) -> str | None:
    """`name` from LLVM `major`: Debian's versioned names first, then its llvm-N folder,
    then an unversioned tool on PATH whose --version reports a new enough LLVM."""
    for candidate in (f"{name}-{major}", f"/usr/lib/llvm-{major}/bin/{name}"):
        found = shutil.which(candidate)
        if found:
            return found
    plain = shutil.which(name)
    if plain:
        try:
            text = subprocess.run([plain, "--version"], capture_output=True, text=True).stdout
        except OSError:
            return None
        version = re.search(r"(?:LLD|LLVM version)\s+(\d+)", text)
        if version and int(version.group(1)) >= int(major):
            return plain
    return None


def find_toolchain(
    object_file_format: str,
    cc: str | None,
    work: Path,
    pinned: PinnedCompiler | None = None,
    platform: Platform = LINUX,
) -> HostToolchain:
    """The tools to compile, archive and link objects of `object_file_format` into
    images of `platform` on this host. `cc` (or $CC, else the target's `pinned`
    compiler, else `cc`) is the compiler driver."""
    named = cc or os.environ.get("CC")
    use_pinned = pinned is not None and not named
    command = list(pinned.command) if pinned is not None and use_pinned else shlex.split(named or "cc")
    env = dict(pinned.env) if pinned is not None and use_pinned else {}
    if not command or not shutil.which(command[0]):
        raise PyfreightError(
            f"C compiler {command[0] if command else '(empty)'!r} not found: install gcc or clang "
            "(Debian: apt-get install gcc) or name one with --cc"
        )
    description = _version_line(command, env)
    major = bitcode_version(object_file_format)
    pinned_flags = tuple(pinned.link_flags) if pinned is not None and use_pinned else ()
    if platform.llvm_binutils and major is None:
        ar, nm = (
            _llvm_tool("llvm-ar", LLVM) or shutil.which("ar"),
            _llvm_tool("llvm-nm", LLVM) or shutil.which("nm"),
        )
        if not ar or not nm:
            raise PyfreightError(
                f"no llvm-ar or llvm-nm found to read {object_file_format} objects: install llvm-{LLVM} "
                f"(Debian: apt-get install llvm-{LLVM}), or Xcode's command line tools on a Mac"
            )
        return HostToolchain(
            cc=tuple(command),
            cc_description=description,
            ar=ar,
            nm=nm,
            link_flags=pinned_flags,
            object_format=object_file_format,
            platform=platform,
            env=env,
            library_names=dict(pinned.library_names) if pinned is not None and use_pinned else {},
        )
    if major is None:
        ar, nm = shutil.which("ar"), shutil.which("nm")
        if not ar or not nm:
            raise PyfreightError("no `ar` or `nm` found: install binutils (Debian: apt-get install binutils)")
        return HostToolchain(
            cc=tuple(command),
            cc_description=description,
            ar=ar,
            nm=nm,
            object_format=object_file_format,
            platform=platform,
            env=env,
            library_names=dict(pinned.library_names) if pinned is not None and use_pinned else {},
        )
    if pinned is not None and use_pinned:
        # The pinned compiler made this bitcode and links it with its own lld; reading
        # its symbols takes llvm-nm of the same LLVM or newer (an older one rebuilds the
        # symbol table from the module and fails on what it does not know).
        readers = {name: _llvm_tool(name, major) for name in ("llvm-ar", "llvm-nm")}
        if not readers["llvm-ar"] or not readers["llvm-nm"]:
            missing = ", ".join(name for name, found in readers.items() if not found)
            raise PyfreightError(
                f"this archive's objects are LLVM {major} bitcode (an LTO build, by its pinned zig): "
                f"reading their symbols needs {missing} of LLVM {major} or newer, which is not "
                f"installed (apt-get install llvm-{major} where your distribution has it); or embed "
                "from the noopt archive of the same release, whose objects are COFF."
            )
        return HostToolchain(
            cc=tuple(command),
            cc_description=description,
            ar=readers["llvm-ar"],
            nm=readers["llvm-nm"],
            object_format=object_file_format,
            platform=platform,
            env=env,
            library_names=dict(pinned.library_names),
        )
    tools = {name: _llvm_tool(name, major) for name in ("ld.lld", "llvm-ar", "llvm-nm")}
    lld, llvm_ar, llvm_nm = tools["ld.lld"], tools["llvm-ar"], tools["llvm-nm"]
    if not lld or not llvm_ar or not llvm_nm:
        missing = ", ".join(name for name, found in tools.items() if not found)
        raise PyfreightError(
            f"this archive's objects are LLVM {major} bitcode (object_file_format llvm-bitcode:{major}, "
            f"an LTO build): linking them needs {missing} of LLVM {major} or newer, and none was found. "
            f"Install clang-{major}, lld-{major} and llvm-{major} (Debian: apt-get install clang-{major} "
            f"lld-{major} llvm-{major}), or embed from an archive built without LTO (noopt or pgo)."
        )
    # gcc and clang both pick `ld.lld` from a -B folder with -fuse-ld=lld; a folder of our
    # own holding that one name makes the choice exact whatever else is on PATH.
    lld_dir = work / "lld"
    lld_dir.mkdir(parents=True, exist_ok=True)
    link = lld_dir / "ld.lld"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(lld)
    return HostToolchain(
        cc=tuple(command),
        cc_description=description,
        ar=llvm_ar,
        nm=llvm_nm,
        bitcode_llvm=major,
        lld_dir=lld_dir,
        link_flags=(f"-B{lld_dir}", "-fuse-ld=lld", f"-Wl,--thinlto-jobs={os.cpu_count() or 1}"),
        object_format=object_file_format,
        platform=platform,
        env=env,
    )
