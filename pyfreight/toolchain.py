"""The compiler environment every recipe's build.sh receives.

These values are part of every artifact's cache key: changing a flag rebuilds
everything built with it."""

from __future__ import annotations

import os

from pyfreight.platforms import platform_of
from pyfreight.targets import Target

# Fixed paths inside the build container. They never name the host.
PREFIX = "/tools/deps"  # where dependencies are installed and build.sh installs to
SYSROOT = "/sysroot"  # the target's C library and kernel headers (targets/*.yaml `sysroot`)
# Force-included in every compile for a glibc target: holds what is built to the
# target's glibc ceiling, older than the sysroot's glibc (pyfreight/container/glibc_floor.py).
GLIBC_FLOOR_HEADER = f"{SYSROOT}/pyfreight/glibc-floor.h"
SOURCES_DIR = "/inputs/sources"
RECIPE_DIR = "/inputs/recipe"
WORK_DIR = "/build/work"

LLVM = "22"  # the LLVM major of every Linux build (dockerfiles/build-packages.txt)
LLVM_BIN = f"/usr/lib/llvm-{LLVM}/bin"  # its unversioned tools, in the build image


# Optimization and hardening as distributions build static libraries:
#  -fPIC: the objects end up in libpython.so and in PIE executables.
#  -fvisibility=hidden: nothing of a dependency is exported from the final binary.
#  the platform's hardening (platforms/: Debian's and Fedora's defaults where they
#  apply) and the target's control-flow protection.
#  -ffile-prefix-map: the container's build folder does not land in objects.
def stack_clash_protection(target: Target) -> bool:
    """Whether code for `target` is compiled with -fstack-clash-protection: where the
    platform's compilers use it and clang has it for the architecture (not 32-bit Arm)."""
    return platform_of(target).stack_clash_protection and target.toolchain.stack_clash_protection


def common_cflags(target: Target, optimization: str | None = None, frame_pointers: bool = True) -> str:
    """The C and C++ flags of every dependency: -O2 unless a recipe asks for its
    upstream's own `optimization` level, and frame pointers unless it leaves them out
    (recipe.yaml)."""
    platform = platform_of(target)
    clash = " -fstack-clash-protection" if stack_clash_protection(target) else ""
    hardening = f"{platform.hardening_cflags}{clash} {target.toolchain.control_flow_cflags}".rstrip()
    flags = f"{optimization or '-O2'} -fPIC -fvisibility=hidden {hardening}"
    if frame_pointers and platform.frame_pointer_cflags:
        flags += f" {platform.frame_pointer_cflags}"
    return f"{flags} -ffile-prefix-map={WORK_DIR}=."


# A zig sysroot: zig at /sysroot/zig and its drivers in /sysroot/bin
# (container/zig_sysroot.py), its cache of compiled runtime pieces filled when the build
# image was made (dockerfiles/build.Dockerfile, ZIG_WARM).
ZIG_CACHE = f"{SYSROOT}/zig-cache"


def compiler_commands(target: Target) -> tuple[str, str]:
    """$CC and $CXX for `target`: clang for its triple and sysroot, its own flags, and
    for glibc the floor header, in the command itself so that no build (and no
    configure check) can leave it out by ignoring CFLAGS or CPPFLAGS. A zig sysroot's
    compiler is zig's clang, which knows its own headers and libraries."""
    if target.toolchain.zig is not None:
        # -g0: zig's cc writes CodeView debug info unless told not to, and with it the
        # whole compiler command line, build folder included, into every object.
        flags = f"-target {target.toolchain.clang_triple} -g0 {target.toolchain.compiler_flags}".rstrip()
        return f"{SYSROOT}/bin/zig-cc {flags}", f"{SYSROOT}/bin/zig-c++ {flags}"
    flags = f"--target={target.toolchain.clang_triple} --sysroot={SYSROOT}"
    if target.toolchain.compiler_flags:
        flags += f" {target.toolchain.compiler_flags}"
    if target.libc.glibc:
        flags += f" -include {GLIBC_FLOOR_HEADER}"
    return f"clang-{LLVM} {flags}", f"clang++-{LLVM} {flags}"


def build_environment(target: Target, jobs: int, source_date_epoch: int) -> dict[str, str]:
    """The environment of build.sh: the toolchain, and the target's own settings for
    recipes (targets/*.yaml `recipe_env`, e.g. $OPENSSL_TARGET). Only `jobs` and the
    epoch vary between runs of the same recipe; neither may change the bytes produced."""
    clang_triple = target.toolchain.clang_triple
    cc, cxx = compiler_commands(target)
    # A foreign target's programs (configure's test programs, tools a build makes and
    # runs) run through its emulator, which finds their loader and C library in the
    # sysroot: the build image has only its own. CROSS_HOST, set only then, is what
    # recipes give configure as --host, so that sources chosen by CPU (libffi's) are
    # the target's; configure still runs its test programs, through the emulator.
    # A Windows target's programs do not run during builds at all: its recipe_env names
    # the --host configure knows it by.
    # BUILD_CFLAGS: what a build compiles its own tools here with (ncurses' make_hash),
    # which would otherwise be the target's CFLAGS, whose control-flow flags (aarch64's
    # -mbranch-protection) clang 22 refuses for this machine.
    # (A Wine of the target's own architecture, run through an emulator, runs nothing
    # during builds either: its emulator's CPU is for check-install's containers.)
    emulation = (
        {"QEMU_LD_PREFIX": SYSROOT, "CROSS_HOST": clang_triple, "BUILD_CFLAGS": "-O2", **target.emulator_env}
        if target.emulated
        else {}
    )
    if target.toolchain.zig is not None:
        emulation["ZIG_GLOBAL_CACHE_DIR"] = ZIG_CACHE
    if platform_of(target).resource_compiler:  # Windows resources (.rc), with the sysroot's headers
        emulation["RC"] = emulation["WINDRES"] = resource_compiler(target)
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": "/tmp",
        "LC_ALL": "C.UTF-8",
        "TZ": "UTC",
        "SOURCE_DATE_EPOCH": str(source_date_epoch),
        "TARGET_TRIPLE": target.triple,
        "TARGET_OS": target.os,  # linux, windows or macos: what a recipe may need to choose by
        "HOST_TRIPLE": clang_triple,
        "PREFIX": PREFIX,
        "SYSROOT": SYSROOT,
        "SRC": SOURCES_DIR,
        "RECIPE_DIR": RECIPE_DIR,
        "JOBS": str(jobs),
        "CC": cc,
        "CXX": cxx,
        "CPP": f"{cc} -E",
        "BUILD_CC": f"clang-{LLVM}",  # for programs a build makes and runs here
        "CFLAGS": common_cflags(target),
        "CXXFLAGS": common_cflags(target),
        "CPPFLAGS": f"-I{PREFIX}/include",
        "LDFLAGS": f"{platform_of(target).build_ldflags} -L{PREFIX}/lib".lstrip(),
        "AR": f"llvm-ar-{LLVM}",
        "RANLIB": f"llvm-ranlib-{LLVM}",
        "NM": f"llvm-nm-{LLVM}",
        "STRIP": f"llvm-strip-{LLVM}",
        "OBJCOPY": f"llvm-objcopy-{LLVM}",
        # Only our own .pc files: never the build image's (bookworm) ones.
        "PKG_CONFIG_LIBDIR": f"{PREFIX}/lib/pkgconfig:{PREFIX}/share/pkgconfig",
        "PKG_CONFIG_PATH": "",
        **emulation,
        **target.recipe_env,
    }


def resource_compiler(target: Target) -> str:
    """$RC and $WINDRES of a PE target: LLVM's windres for its machine, preprocessing
    with the sysroot's mingw-w64 headers (winresrc.h, winver.h). Its --target is the
    mingw triple the target's configure scripts take as --host (recipe_env CROSS_HOST):
    llvm-windres maps GNU windres' names of x86 machines (pe-x86-64) to such a triple, and
    hands any other name to its preprocessor unchanged (clang knows no pe-aarch64-little,
    and mingw-w64's headers, seeing no machine, stop: "Only Win32 target is supported!")."""
    headers = f"{SYSROOT}/zig/lib/libc/include/any-windows-any"
    return f"llvm-windres-{LLVM} --target={target.recipe_env['CROSS_HOST']} --preprocessor-arg=-I{headers}"


def compiler_runtime_package(target: Target, pinned_packages: str) -> str:
    """package:arch=version of Debian's LLVM compiler runtime (builtins, profile runtime)
    for a target that takes its architecture's (targets/*.yaml `foreign_compiler_runtime`),
    pinned as the build image's own is (`pinned_packages`: dockerfiles/build-packages.txt);
    "" for any other target."""
    if not target.toolchain.foreign_compiler_runtime:
        return ""
    name = f"libclang-rt-{LLVM}-dev"
    for line in pinned_packages.splitlines():
        package, _, version = line.partition("=")
        if package == name and version:
            return f"{name}:{target.debian_architecture}={version}"
    raise AssertionError(f"{name} is not pinned in the build image's packages")


def zig_warm_command(target: Target) -> str:
    """The compiles that fill a zig sysroot's cache in the build image: a C and a C++
    program (warm.c, warm.cc) built as every build will build one, so that the pieces
    they need are there."""
    cc, cxx = compiler_commands(target)
    flags = common_cflags(target)
    return f"{cc} {flags} warm.c -o warm.exe && {cxx} {flags} warm.cc -o warm-cxx.exe"


def keyed_settings(target: Target) -> dict[str, str]:
    """What of the environment decides the output: it goes into cache keys."""
    env = build_environment(target, jobs=1, source_date_epoch=0)
    for varying in ("JOBS", "SOURCE_DATE_EPOCH"):
        env.pop(varying)
    return env


def default_jobs() -> int:
    return os.cpu_count() or 1
