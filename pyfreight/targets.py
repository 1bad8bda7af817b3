"""The machines pyfreight builds for, read from targets/<triple>.yaml.

A target is data: each file (checked against schema/target.schema.json) says
everything about one, and every table about a target (compiler triple, ELF machine,
loader, C library ceiling, allowed NEEDED entries, system libraries, recipe settings,
how to run its binaries) is derived from the `Target` loaded here, once. Adding a
target is adding a file (docs/targets.md)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

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
class UvPlatform:
    """How uv's downloads index names the target's platform (targets/*.yaml `uv_platform`)."""

    os: str  # linux, windows, macos
    arch: str  # the arch family: x86_64, aarch64
    libc: str  # gnu, musl, none
    arch_variant: str | None = None  # a microarchitecture level of the family: v2, v3, v4

    @property
    def key_arch(self) -> str:
        """The arch part of the index's keys: the family, then its level after an underscore."""
        return f"{self.arch}_{self.arch_variant}" if self.arch_variant else self.arch

    @property
    def key(self) -> str:
        """The platform part of the index's keys: os, arch (with its level) and libc."""
        return f"{self.os}-{self.key_arch}-{self.libc}"


@dataclass(frozen=True)
class CrossCompiler:
    """A compiler on this machine that links programs for a cross-compiled target
    (`pyfreight embed --cc`), and the Debian packages providing it (`make setup`)."""

    command: str
    debian_packages: tuple[str, ...]


@dataclass(frozen=True)
class Toolchain:
    """How the target's code is compiled and linked (targets/*.yaml `toolchain`)."""

    clang_triple: str
    sysroot: MappingProxyType[str, Any]  # Debian: suite, variant, pinned packages, kept paths
    zig: Source | None  # the pinned zig that is the whole sysroot (and compiler), if it is
    zig_llvm: str | None  # the LLVM major version of that zig's clang (its LTO objects' bitcode)
    compiler_flags: str  # of every compile and link, in $CC and $CXX (e.g. the compiler runtime)
    # CPython's core carries cpython/cpu-level-check.c: refuses a CPU below compiler_flags' -march
    cpu_level_check: bool
    control_flow_cflags: str  # the compiler flags of the target's control-flow protection ("": none)
    cpython_build: Literal["configure", "visual-studio-projects"]
    # CPython configure's answers for a cross build (cache variables), from the data
    cpython_configure_answers: MappingProxyType[str, str]
    cpython_ldflags: str  # build-only flags of CPython's own links
    # preprocessor definitions of CPython's own code in a Visual Studio projects build
    cpython_definitions: tuple[str, ...]
    cross_cc: CrossCompiler | None
    # the build image takes LLVM's builtins and profile runtime of the target's architecture
    foreign_compiler_runtime: bool
    # clang has the preserve_none calling convention here, which CPython's tail-calling
    # interpreter (--with-tail-call-interp) needs
    tail_call_interpreter: bool
    # clang has -fstack-clash-protection for the architecture (not for 32-bit Arm)
    stack_clash_protection: bool


@dataclass(frozen=True)
class ElfFiles:
    """A target of ELF files (targets/*.yaml `elf`)."""

    machine: str  # pyelftools' e_machine name
    loader: str  # PT_INTERP's file name
    kind: Literal["elf"] = "elf"


@dataclass(frozen=True)
class PeFiles:
    """A target of PE files (targets/*.yaml `pe`)."""

    machine: str  # the COFF machine name
    # DLLs shipped as their vendor built them (Windows: the VC runtime, beside python.exe)
    redistributable: Redistributable | None
    launchers: ScriptLaunchers | None
    # interpreter ABI ("cp314", "cp314t") -> a PyPI wheel whose extension module MSVC
    # built (it imports the VC runtime): check-install loads it
    msvc_wheels: MappingProxyType[str, Source]
    # the programs' stack reserve in bytes (every thread's, unless it asks for another);
    # None: the toolchain's default
    stack_reserve: int | None = None
    kind: Literal["pe"] = "pe"

    @property
    def redistributed(self) -> Mapping[str, str]:
        """The vendor's DLLs beside the interpreter, by file name: their sha256."""
        return self.redistributable.sha256 if self.redistributable else MappingProxyType({})


@dataclass(frozen=True)
class MachOFiles:
    """A target of Mach-O files (targets/*.yaml `macho`)."""

    cpu: str  # the Mach-O CPU type name (ARM64, X86_64)
    minimum_os: tuple[int, int]  # the oldest macOS its files may ask for (LC_BUILD_VERSION)
    code_signature_required: bool  # every Mach-O file carries a valid ad-hoc signature (Apple silicon)
    # bundled libraries' symbols the pinned linker exports anyway -> why
    exported_by_the_toolchain: MappingProxyType[str, str]
    kind: Literal["macho"] = "macho"

    @property
    def minimum_os_text(self) -> str:
        return ".".join(map(str, self.minimum_os))


BinaryFiles = ElfFiles | PeFiles | MachOFiles


@dataclass(frozen=True)
class CLibrary:
    """The C library its programs use (targets/*.yaml `libc`)."""

    name: Literal["glibc", "musl", "ucrt", "libsystem"]
    ceiling: tuple[int, int] | None  # glibc, musl: no shipped ELF file may need a newer version
    static_linking: bool  # the C library can be linked statically (the `static` modifier)
    needed: frozenset[str]  # libraries a shipped binary may load (DT_NEEDED, PE imports)
    system_libraries: frozenset[str]  # what PYTHON.json's links may name as system libraries
    runtime_tools: str | None  # libc-recipes/ recipe of the tools of a libc-only runtime image

    @property
    def glibc(self) -> bool:
        """Whether it is glibc, whose symbol versions the files may need (up to the
        ceiling): what PYTHON.json's crt_features and the ELF rules judge."""
        return self.name == "glibc"

    @property
    def held_ceiling(self) -> tuple[int, int]:
        """The ceiling of a glibc or musl library (ucrt and libSystem have none)."""
        assert self.ceiling is not None, f"{self.name} has no ceiling"
        return self.ceiling

    @property
    def ceiling_text(self) -> str:
        return ".".join(map(str, self.held_ceiling))


@dataclass(frozen=True)
class RunsNatively:
    """Its programs are this machine's own (targets/*.yaml `run: native`)."""

    kind: Literal["native"] = "native"


@dataclass(frozen=True)
class RunsEmulated:
    """Its programs run here through a binfmt_misc emulator (`run: {emulator: …}`)."""

    emulator: str  # qemu-user's program name
    cpu: str | None  # the CPU model the emulator is told (QEMU_CPU)
    # the Debian suite of its runtime image, where images.yaml's (the oldest) lacks its architecture
    debian_suite: str | None = None
    kind: Literal["emulator"] = "emulator"


@dataclass(frozen=True)
class RunsUnderWine:
    """Its programs run here under Debian's Wine, pinned (`run: {wine: …}`)."""

    packages: MappingProxyType[str, str]
    limits: MappingProxyType[str, str]  # check-install checks that Wine cannot pass -> why
    # Wine of the target's own architecture (Debian's, for debian_architecture), run here
    # through this binfmt_misc emulator, told this CPU: Wine runs a PE of its host's
    # machine only. None: this machine's own Wine.
    emulator: str | None = None
    cpu: str | None = None
    kind: Literal["wine"] = "wine"


@dataclass(frozen=True)
class RunsNowhereHere:
    """Its programs cannot run on this machine (`run: {unavailable: why}`)."""

    reason: str
    kind: Literal["unavailable"] = "unavailable"


Running = RunsNatively | RunsEmulated | RunsUnderWine | RunsNowhereHere


@dataclass(frozen=True)
class Builds:
    """The builds a target has (targets/*.yaml `builds`)."""

    release: tuple[str, ...]  # the builds a release carries for this target
    unavailable_options: MappingProxyType[str, str]  # "pgo"/"lto"/a modifier -> why the target cannot have it
    unavailable_versions: MappingProxyType[str, str]  # CPython minor ("3.13") -> why it is not built
    unfinished: MappingProxyType[str, str]  # step ("archives", "check_install") -> why not yet
    experimental_jit: bool  # CPython's Tools/jit has stencils for it (pgo builds carry the JIT, off)
    bolt: bool  # llvm-bolt lays its pgo builds out again (CodeGen.bolt, unless +nobolt)


@dataclass(frozen=True)
class Target:
    """One target, as its file says it: a few names, then one section each for its
    toolchain, its binary files, its C library, how its programs run here and its builds."""

    triple: str  # our name, as python-build-standalone's
    make_name: str  # prefix of the make targets: `make MAKE_NAME-pgo`
    python_platform_tag: str  # sysconfig.get_platform() of the built interpreter
    uv_platform: UvPlatform
    debian_architecture: str  # of the sysroot's packages and of the runtime image
    recipe_env: MappingProxyType[str, str]  # given to every dependency's build.sh
    toolchain: Toolchain
    files: BinaryFiles
    libc: CLibrary
    run: Running
    builds: Builds
    is_default: bool = False

    def __hash__(self) -> int:
        # The triple names the target (one file each); the mappings it holds cannot be hashed.
        return hash(self.triple)

    @property
    def binary_format(self) -> Literal["elf", "pe", "macho"]:
        """What the target's executables and libraries are."""
        return self.files.kind

    @property
    def elf(self) -> ElfFiles:
        """The ELF section of a target of ELF files."""
        assert isinstance(self.files, ElfFiles), f"{self.triple} makes no ELF files"
        return self.files

    @property
    def pe(self) -> PeFiles:
        """The PE section of a target of PE files."""
        assert isinstance(self.files, PeFiles), f"{self.triple} makes no PE files"
        return self.files

    @property
    def macho(self) -> MachOFiles:
        """The Mach-O section of a target of Mach-O files."""
        assert isinstance(self.files, MachOFiles), f"{self.triple} makes no Mach-O files"
        return self.files

    @property
    def redistributable(self) -> Redistributable | None:
        """A vendor's files its trees ship as the vendor built them (PE targets only)."""
        return self.files.redistributable if isinstance(self.files, PeFiles) else None

    @property
    def native(self) -> bool:
        """Whether this machine builds and runs the target's code as its own; any other
        target is cross-compiled and its programs run through an emulator or Wine."""
        return self.run.kind == "native"

    @property
    def emulated(self) -> bool:
        """Whether its programs run here through an emulator (binfmt_misc, qemu-user)."""
        return self.run.kind == "emulator"

    @property
    def emulator_env(self) -> dict[str, str]:
        """The environment of the target's programs on this machine: the emulator's CPU."""
        if isinstance(self.run, RunsEmulated | RunsUnderWine) and self.run.cpu:
            return {"QEMU_CPU": self.run.cpu}
        return {}

    @property
    def wine(self) -> RunsUnderWine:
        """The Wine that runs a Windows target's programs here."""
        assert isinstance(self.run, RunsUnderWine), f"{self.triple} does not run under Wine"
        return self.run

    def require(self, step: str) -> None:
        """Stops, with the data's reason, when `step` is not made for this target yet."""
        if step in self.builds.unfinished:
            raise PyfreightError(f"{self.triple}: {' '.join(self.builds.unfinished[step].split())}")

    @property
    def os(self) -> str:
        """The operating system, as uv names it (linux, windows): what recipes say they
        are unavailable on."""
        return self.uv_platform.os

    @property
    def uname_machine(self) -> str:
        """The machine name the target's uname reports: the last part of its platform tag
        (macosx-MAJOR.MINOR-MACHINE), which sysconfig builds from it."""
        return self.python_platform_tag.rpartition("-")[2]

    @property
    def frameworks(self) -> frozenset[str]:
        """The macOS frameworks the target's files may load (those of `libc.needed`)."""
        found = (re.fullmatch(r"/System/Library/Frameworks/(\w+)\.framework/.*", n) for n in self.libc.needed)
        return frozenset(m[1] for m in found if m)

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> Target:
        return cls(
            triple=data["triple"],
            make_name=data["make_name"],
            python_platform_tag=data["python_platform_tag"],
            uv_platform=UvPlatform(**data["uv_platform"]),
            debian_architecture=data["debian_architecture"],
            recipe_env=MappingProxyType(dict(data["recipe_env"])),
            toolchain=_toolchain(data["toolchain"]),
            files=_files(data),
            libc=_libc(data["libc"]),
            run=_running(data["run"]),
            builds=_builds(data["builds"]),
            is_default=bool(data.get("default", False)),
        )


def _toolchain(data: dict[str, Any]) -> Toolchain:
    zig = data["sysroot"].get("zig")
    cross = data.get("cross_cc")
    return Toolchain(
        clang_triple=data["clang_triple"],
        sysroot=MappingProxyType(dict(data["sysroot"])),
        zig=None if zig is None else _wheel_source(zig),
        zig_llvm=None if zig is None else str(zig["llvm"]),
        compiler_flags=data.get("compiler_flags", ""),
        cpu_level_check=bool(data.get("cpu_level_check", False)),
        control_flow_cflags=data.get("control_flow_cflags", ""),
        cpython_build=data.get("cpython_build", "configure"),
        cpython_configure_answers=MappingProxyType(dict(data.get("cpython_configure_answers", {}))),
        cpython_ldflags=data.get("cpython_ldflags", ""),
        cpython_definitions=tuple(data.get("cpython_definitions", ())),
        cross_cc=None if cross is None else CrossCompiler(cross["command"], tuple(cross["debian_packages"])),
        foreign_compiler_runtime=bool(data.get("foreign_compiler_runtime", False)),
        tail_call_interpreter=bool(data.get("tail_call_interpreter", True)),
        stack_clash_protection=bool(data.get("stack_clash_protection", True)),
    )


def _files(data: dict[str, Any]) -> BinaryFiles:
    """The one section of `elf`, `pe` and `macho` the file has (its schema holds it to one)."""
    if "elf" in data:
        return ElfFiles(machine=data["elf"]["machine"], loader=data["elf"]["loader"])
    if "pe" in data:
        pe = data["pe"]
        return PeFiles(
            machine=pe["machine"],
            redistributable=_redistributable(pe.get("redistributed")),
            launchers=_launchers(pe.get("launchers")),
            msvc_wheels=MappingProxyType(
                {abi: _wheel_source(w) for abi, w in pe.get("msvc_wheels", {}).items()}
            ),
            stack_reserve=pe.get("stack_reserve"),
        )
    macho = data["macho"]
    return MachOFiles(
        cpu=macho["cpu"],
        minimum_os=_major_minor(macho["minimum_os"]),
        code_signature_required=macho.get("code_signature") == "required",
        exported_by_the_toolchain=MappingProxyType(dict(macho.get("exported_by_the_toolchain", {}))),
    )


def _libc(data: dict[str, Any]) -> CLibrary:
    ceiling = data.get("ceiling")
    return CLibrary(
        name=data["name"],
        ceiling=None if ceiling is None else _major_minor(ceiling),
        static_linking=bool(data.get("static_linking", False)),
        needed=frozenset(data["needed"]),
        system_libraries=frozenset(data["system_libraries"]),
        runtime_tools=data.get("runtime_tools"),
    )


def _running(data: str | dict[str, Any]) -> Running:
    """`run: native`, or a mapping of one way (emulator, wine, unavailable) to its details."""
    if data == "native":
        return RunsNatively()
    assert isinstance(data, dict)
    if "emulator" in data:
        return RunsEmulated(
            emulator=data["emulator"], cpu=data.get("cpu"), debian_suite=data.get("debian_suite")
        )
    if "wine" in data:
        wine = data["wine"]
        return RunsUnderWine(
            packages=MappingProxyType(dict(wine["packages"])),
            limits=MappingProxyType(dict(wine.get("limits") or {})),
            emulator=wine.get("emulator"),
            cpu=wine.get("cpu"),
        )
    return RunsNowhereHere(reason=data["unavailable"])


def _builds(data: dict[str, Any]) -> Builds:
    return Builds(
        release=tuple(data["release"]),
        unavailable_options=MappingProxyType(dict(data.get("unavailable_options", {}))),
        unavailable_versions=MappingProxyType(dict(data.get("unavailable_versions", {}))),
        unfinished=MappingProxyType(dict(data.get("unfinished", {}))),
        experimental_jit=bool(data.get("experimental_jit", False)),
        bolt=bool(data.get("bolt", False)),
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
    return sorted({e for t in all_targets().values() if (e := emulator_of(t)) is not None})


def emulator_of(target: Target) -> str | None:
    """The binfmt_misc emulator the target's programs (or the Wine that runs them) need here."""
    return target.run.emulator if isinstance(target.run, RunsEmulated | RunsUnderWine) else None


def cross_compilers() -> list[str]:
    """`COMMAND:PACKAGE,…` for each target's cross compiler (scripts/setup.sh)."""
    return sorted(
        f"{cc.command}:{','.join(cc.debian_packages)}"
        for cc in (t.toolchain.cross_cc for t in all_targets().values())
        if cc is not None
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
