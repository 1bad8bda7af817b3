"""The machines pyfreight builds for, read from targets/<triple>.yaml.

A target is data: each file (checked against schema/target.schema.json) says
everything about one, and every table about a target (compiler triple, ELF machine,
loader, C library ceiling, allowed NEEDED entries, system libraries, recipe settings,
how to run its binaries) is derived from the `Target` loaded here, once. Adding a
target is adding a file (docs/targets.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from pyfreight.datafiles import load_yaml, shown
from pyfreight.errors import PyfreightError
from pyfreight.paths import REPO_ROOT
from pyfreight.sources.recipes import PypiLocation, Source

TARGETS_DIR = REPO_ROOT / "targets"
SCHEMA = "target.schema.json"


@dataclass(frozen=True)
class Redistributable:
    """A vendor's DLLs a tree ships as the vendor built them, out of a pinned wheel
    (targets/*.yaml pe.redistributed): judged by name and sha256 alone."""

    name: str  # the component (SBOM, licenses/<name>/)
    version: str
    license: str  # SPDX expression
    wheel: Source
    license_member: str  # the wheel's member holding the license text
    members: MappingProxyType[str, str]  # file name in the tree -> the wheel's member
    sha256: MappingProxyType[str, str]  # file name in the tree -> its sha256


@dataclass(frozen=True)
class ScriptLaunchers:
    """distlib's script launchers in the pip that CPython's source bundles (targets/*.yaml
    pe.launchers): pip makes console scripts from them, and validate judges them by
    sha256 alone, in their folder and as the start of each console script."""

    folder: str  # below the tree's top, forward slashes
    console: str  # the one the tree's console scripts start with
    interpreter: str  # what their shebang names, relative to the launcher's folder
    sha256: MappingProxyType[str, str]  # file name -> sha256
    size: MappingProxyType[str, int]  # file name -> size in bytes

    @property
    def shebang(self) -> bytes:
        """The line after the launcher in each console script (distlib writes it so)."""
        return b"#!" + self.interpreter.encode() + b"\n"


@dataclass(frozen=True)
class Target:
    triple: str  # our name, as python-build-standalone's
    make_name: str  # prefix of the make targets: `make MAKE_NAME-pgo`
    clang_triple: str
    python_platform_tag: str  # sysconfig.get_platform() of the built interpreter
    uv_platform: tuple[str, str, str]  # (os, arch, libc) as uv's downloads index names them
    debian_architecture: str  # of the sysroot's packages and of the runtime image
    sysroot: MappingProxyType[str, Any]  # Debian: suite, variant, pinned packages, kept paths
    zig: Source | None  # the pinned zig that is the whole sysroot (and compiler), if it is
    zig_llvm: str | None  # the LLVM major version of that zig's clang (its LTO objects' bitcode)
    control_flow_cflags: str  # the compiler flags of the target's control-flow protection ("": none)
    compiler_flags: str  # of every compile and link, in $CC and $CXX (e.g. the compiler runtime)
    elf_machine: str | None  # pyelftools' e_machine name, for a target of ELF files
    loader: str | None  # PT_INTERP's file name, for a target of ELF files
    pe_machine: str | None  # the COFF machine name, for a target of PE files
    macho_cpu: str | None  # the Mach-O CPU type name (ARM64, X86_64), for a target of Mach-O files
    macos_minimum: tuple[int, int] | None  # the oldest macOS its files may ask for (LC_BUILD_VERSION)
    code_signature_required: bool  # every Mach-O file carries a valid ad-hoc signature (Apple silicon)
    # bundled libraries' symbols the pinned linker exports anyway -> why (macho data)
    exported_by_the_toolchain: MappingProxyType[str, str]
    libc: str  # "glibc", "musl" or "ucrt"
    libc_ceiling: tuple[int, int] | None  # glibc: no shipped ELF file may need a newer version
    static_linking: bool  # the C library can be linked statically (the `static` modifier)
    allowed_needed: frozenset[str]  # libraries a shipped binary may load (DT_NEEDED, PE imports)
    system_libraries: frozenset[str]  # what PYTHON.json's links may name as system libraries
    recipe_env: MappingProxyType[str, str]  # given to every dependency's build.sh
    runner: str  # how its programs run here: "native", "emulator", "wine" or "unavailable"
    unavailable_reason: str | None  # why its programs cannot run here, for runner "unavailable"
    emulator: str | None  # the binfmt_misc emulator, for runner "emulator"
    emulator_cpu: str | None  # the CPU model the emulator is told (QEMU_CPU)
    wine_packages: MappingProxyType[str, str]  # Debian's Wine, pinned, for runner "wine"
    wine_limits: MappingProxyType[str, str]  # check-install checks that Wine cannot pass -> why
    # CPython configure's answers for a cross build (cache variables), from the data
    cpython_configure_answers: MappingProxyType[str, str]
    cpython_ldflags: str  # build-only flags of CPython's own links
    cpython_build: str  # "configure" or "visual-studio-projects": how CPython is built for it
    unfinished: MappingProxyType[str, str]  # step ("archives", "check_install") -> why not yet
    unavailable_options: MappingProxyType[str, str]  # "pgo"/"lto"/a modifier -> why the target cannot have it
    unavailable_versions: MappingProxyType[str, str]  # CPython minor ("3.13") -> why it is not built
    release_options: tuple[str, ...]  # the builds a release carries for this target
    cross_cc: str | None  # a compiler here that links for the target (embed --cc)
    cross_cc_packages: tuple[str, ...]  # the Debian packages providing it
    runtime_tools: str | None = None  # libc-recipes/ recipe of the tools of a libc-only runtime image
    experimental_jit: bool = False  # CPython's Tools/jit has stencils for it (pgo builds carry the JIT, off)
    bolt: bool = False  # llvm-bolt lays its pgo builds out again (CodeGen.bolt, unless +nobolt)
    foreign_profile_runtime: bool = False  # the build image takes LLVM's profile runtime of its architecture
    # interpreter ABI ("cp314", "cp314t") -> a PyPI wheel whose extension module MSVC
    # built (it imports the VC runtime): check-install loads it
    msvc_wheels: MappingProxyType[str, Source] = field(default_factory=lambda: MappingProxyType({}))
    # DLLs shipped as their vendor built them (Windows: the VC runtime, beside python.exe)
    redistributable: Redistributable | None = None
    launchers: ScriptLaunchers | None = None
    is_default: bool = False

    @property
    def pe_redistributed(self) -> Mapping[str, str]:
        """The vendor's DLLs beside the interpreter, by file name: their sha256."""
        return self.redistributable.sha256 if self.redistributable else MappingProxyType({})

    def __hash__(self) -> int:
        # The triple names the target (one file each); the mappings it holds cannot be hashed.
        return hash(self.triple)

    @property
    def native(self) -> bool:
        """Whether this machine builds and runs the target's code as its own; any other
        target is cross-compiled and its programs run through an emulator or Wine."""
        return self.runner == "native"

    @property
    def glibc(self) -> bool:
        """Whether its C library is glibc, whose symbol versions the files may need (up
        to the ceiling): what PYTHON.json's crt_features and the ELF rules judge."""
        return self.libc == "glibc"

    @property
    def emulated(self) -> bool:
        """Whether its programs run here through an emulator (binfmt_misc, qemu-user)."""
        return self.runner == "emulator"

    def require(self, step: str) -> None:
        """Stops, with the data's reason, when `step` is not made for this target yet."""
        if step in self.unfinished:
            raise PyfreightError(f"{self.triple}: {' '.join(self.unfinished[step].split())}")

    @property
    def os(self) -> str:
        """The operating system, as uv names it (linux, windows): what recipes say they
        are unavailable on."""
        return self.uv_platform[0]

    @property
    def binary_format(self) -> str:
        """ "elf", "pe" or "macho": what the target's executables and libraries are."""
        if self.pe_machine is not None:
            return "pe"
        return "macho" if self.macho_cpu is not None else "elf"

    @property
    def uname_machine(self) -> str:
        """The machine name the target's uname reports: the last part of its platform tag
        (macosx-MAJOR.MINOR-MACHINE), which sysconfig builds from it."""
        return self.python_platform_tag.rsplit("-", 1)[1]

    @property
    def frameworks(self) -> frozenset[str]:
        """The macOS frameworks the target's files may load (those of `libc.needed`)."""
        found = (
            re.fullmatch(r"/System/Library/Frameworks/(\w+)\.framework/.*", n) for n in self.allowed_needed
        )
        return frozenset(m[1] for m in found if m)

    @property
    def macos_minimum_text(self) -> str:
        assert self.macos_minimum is not None, f"{self.triple} is not a macOS target"
        return ".".join(map(str, self.macos_minimum))

    @property
    def emulator_env(self) -> dict[str, str]:
        """The environment of the target's programs on this machine: the emulator's CPU."""
        return {"QEMU_CPU": self.emulator_cpu} if self.emulator_cpu else {}

    @property
    def ceiling(self) -> tuple[int, int]:
        """The C library ceiling of a glibc or musl target (ucrt has none)."""
        assert self.libc_ceiling is not None, f"{self.triple} has no C library ceiling"
        return self.libc_ceiling

    @property
    def ceiling_text(self) -> str:
        return ".".join(map(str, self.ceiling))

    @property
    def elf_loader(self) -> str:
        """PT_INTERP's file name of a target of ELF files."""
        assert self.loader is not None, f"{self.triple} has no ELF loader"
        return self.loader

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Target:
        ceiling = data["libc"].get("ceiling")
        run = data["run"]
        run_kind = "native" if run == "native" else next(iter(run))
        elf = data.get("elf", {})
        zig = data["sysroot"].get("zig")
        macho = data.get("macho", {})
        return cls(
            triple=data["triple"],
            make_name=data["make_name"],
            clang_triple=data["clang_triple"],
            python_platform_tag=data["python_platform_tag"],
            uv_platform=(data["uv_platform"]["os"], data["uv_platform"]["arch"], data["uv_platform"]["libc"]),
            debian_architecture=data["debian_architecture"],
            sysroot=MappingProxyType(dict(data["sysroot"])),
            zig=None if zig is None else _wheel_source(zig),
            zig_llvm=None if zig is None else str(zig["llvm"]),
            control_flow_cflags=data.get("control_flow_cflags", ""),
            compiler_flags=data.get("compiler_flags", ""),
            elf_machine=elf.get("machine"),
            loader=elf.get("loader"),
            pe_machine=data.get("pe", {}).get("machine"),
            redistributable=_redistributable(data.get("pe", {}).get("redistributed")),
            launchers=_launchers(data.get("pe", {}).get("launchers")),
            msvc_wheels=MappingProxyType(
                {abi: _wheel_source(w) for abi, w in data.get("msvc_wheels", {}).items()}
            ),
            macho_cpu=macho.get("cpu"),
            macos_minimum=_major_minor(macho["minimum_os"]) if macho else None,
            code_signature_required=macho.get("code_signature") == "required",
            exported_by_the_toolchain=MappingProxyType(dict(macho.get("exported_by_the_toolchain", {}))),
            libc=data["libc"]["name"],
            libc_ceiling=None if ceiling is None else _major_minor(ceiling),
            static_linking=bool(data["libc"].get("static_linking", False)),
            allowed_needed=frozenset(data["libc"]["needed"]),
            system_libraries=frozenset(data["libc"]["system_libraries"]),
            recipe_env=MappingProxyType(dict(data["recipe_env"])),
            runner="emulator" if run_kind == "emulator" else run_kind,
            unavailable_reason=run.get("unavailable") if run_kind == "unavailable" else None,
            emulator=run.get("emulator") if run_kind == "emulator" else None,
            emulator_cpu=run.get("cpu") if run_kind == "emulator" else None,
            wine_packages=MappingProxyType(dict(run["wine"]["packages"]) if run_kind == "wine" else {}),
            wine_limits=MappingProxyType(dict(run["wine"].get("limits", {})) if run_kind == "wine" else {}),
            cpython_configure_answers=MappingProxyType(dict(data.get("cpython_configure_answers", {}))),
            cpython_ldflags=data.get("cpython_ldflags", ""),
            cpython_build=data.get("cpython_build", "configure"),
            unfinished=MappingProxyType(dict(data.get("unfinished", {}))),
            unavailable_options=MappingProxyType(dict(data.get("unavailable_options", {}))),
            unavailable_versions=MappingProxyType(dict(data.get("unavailable_versions", {}))),
            release_options=tuple(data["release_options"]),
            cross_cc=data.get("cross_cc", {}).get("command"),
            cross_cc_packages=tuple(data.get("cross_cc", {}).get("debian_packages", ())),
            runtime_tools=data.get("runtime_tools"),
            experimental_jit=bool(data.get("experimental_jit", False)),
            bolt=bool(data.get("bolt", False)),
            foreign_profile_runtime=bool(data.get("foreign_profile_runtime", False)),
            is_default=bool(data.get("default", False)),
        )


def _major_minor(text: str) -> tuple[int, int]:
    major, minor = (int(part) for part in text.split("."))
    return major, minor


def _redistributable(data: dict[str, Any] | None) -> Redistributable | None:
    if data is None:
        return None
    return Redistributable(
        name=data["name"],
        version=data["version"],
        license=data["license"],
        wheel=_wheel_source(data["wheel"]),
        license_member=data["license_file"],
        members=MappingProxyType({name: f["member"] for name, f in data["files"].items()}),
        sha256=MappingProxyType({name: f["sha256"] for name, f in data["files"].items()}),
    )


def _launchers(data: dict[str, Any] | None) -> ScriptLaunchers | None:
    if data is None:
        return None
    if data["console"] not in data["files"]:
        raise PyfreightError(f"pe.launchers.console {data['console']} is not one of pe.launchers.files")
    return ScriptLaunchers(
        folder=data["folder"],
        console=data["console"],
        interpreter=data["interpreter"],
        sha256=MappingProxyType({name: f["sha256"] for name, f in data["files"].items()}),
        size=MappingProxyType({name: f["size"] for name, f in data["files"].items()}),
    )


def _wheel_source(data: dict[str, Any]) -> Source:
    pypi = data["pypi"]
    return Source(
        file=data["file"],
        sha256=data["sha256"],
        size=data["size"],
        urls=(),
        debian=None,
        pypi=PypiLocation(project=pypi["project"], version=pypi["version"]),
    )


def load_targets(directory: Path = TARGETS_DIR) -> dict[str, Target]:
    """Every target file of `directory`, by triple, each checked against its schema, its
    file name against its triple, and names and the default across files."""
    targets: dict[str, Target] = {}
    make_names: dict[str, str] = {}
    for path in sorted(directory.glob("*.yaml")):
        found = Target.from_data(load_yaml(path, SCHEMA))
        if path.stem != found.triple:
            raise PyfreightError(
                f"{shown(path)}: says triple {found.triple}; name the file {found.triple}.yaml"
            )
        if found.make_name in make_names:
            raise PyfreightError(
                f"{shown(path)}: make_name {found.make_name} is already {make_names[found.make_name]}'s"
            )
        make_names[found.make_name] = found.triple
        targets[found.triple] = found
    defaults = [t.triple for t in targets.values() if t.is_default]
    if len(defaults) != 1:
        raise PyfreightError(
            f"{shown(directory)}: exactly one target file must say `default: true` (found {len(defaults)}: "
            f"{', '.join(defaults) or 'none'})"
        )
    return targets


@cache
def all_targets() -> MappingProxyType[str, Target]:
    return MappingProxyType(load_targets())


def default_target() -> Target:
    return next(t for t in all_targets().values() if t.is_default)


def build_machine_target() -> Target:
    """The target whose interpreter runs the build of the others (their build python):
    the default one, which must be this machine's own."""
    found = default_target()
    if not found.native:
        raise PyfreightError(
            f"the default target {found.triple} does not run natively here; a cross build needs one that does"
        )
    return found


def emulators() -> list[str]:
    """The binfmt_misc emulators the targets need (scripts/ensure-emulators.sh)."""
    return sorted({t.emulator for t in all_targets().values() if t.emulator})


def cross_compilers() -> list[str]:
    """`COMMAND:PACKAGE,…` for each target's cross compiler (scripts/setup.sh)."""
    return sorted(
        f"{t.cross_cc}:{','.join(t.cross_cc_packages)}" for t in all_targets().values() if t.cross_cc
    )


def known_names() -> str:
    return ", ".join(
        f"{t.triple} ({t.make_name})" for t in sorted(all_targets().values(), key=lambda t: t.triple)
    )


def target(name: str) -> Target:
    """The target a triple or a make name (targets/*.yaml) names."""
    for found in all_targets().values():
        if name in (found.triple, found.make_name):
            return found
    raise PyfreightError(f"unknown target {name!r}; known: {known_names()} (targets/*.yaml)")
