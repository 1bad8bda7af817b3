"""Build options of CPython and the configure arguments and compiler flags they mean."""

from __future__ import annotations

from dataclasses import dataclass

from pyfreight import toolchain
from pyfreight.errors import PyfreightError

BASE_OPTIONS = ("noopt", "debug", "lto", "pgo", "pgo+lto")
INSTALL_PREFIX = "/install"  # inside the container; scrubbed from the installed tree


@dataclass(frozen=True)
class BuildOptions:
    """One build option string, e.g. "pgo+lto" or "freethreaded+debug"."""

    base: str
    freethreaded: bool = False

    @classmethod
    def parse(cls, text: str) -> BuildOptions:
        freethreaded = text.startswith("freethreaded+")
        base = text.removeprefix("freethreaded+")
        if base not in BASE_OPTIONS:
            choices = ", ".join(BASE_OPTIONS)
            raise PyfreightError(
                f"unknown build option {text!r}: use one of {choices}, optionally prefixed with freethreaded+"
            )
        return cls(base, freethreaded)

    def __str__(self) -> str:
        return ("freethreaded+" if self.freethreaded else "") + self.base

    @property
    def pgo(self) -> bool:
        return self.base in ("pgo", "pgo+lto")

    @property
    def lto(self) -> bool:
        return self.base in ("lto", "pgo+lto")


def _minor(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


def configure_args(version: str, options: BuildOptions) -> list[str]:
    """./configure arguments for CPython `version` (e.g. "3.14.7") built with `options`."""
    minor = _minor(version)
    if options.freethreaded and minor < (3, 13):
        raise PyfreightError(f"free-threading needs CPython 3.13 or newer, not {version}")
    args = [
        f"--prefix={INSTALL_PREFIX}",
        # Our expat and mpdecimal (from recipes), not the copies bundled in the source.
        "--with-system-expat",
        "--with-system-libmpdec",
        f"--with-openssl={toolchain.PREFIX}",
        "--with-openssl-rpath=no",
        # libedit (BSD) for the readline module, instead of GPL readline.
        "--with-readline=editline",
        # pip from the wheel bundled in the source; nothing is downloaded.
        "--with-ensurepip=install",
    ]
    if options.base == "debug":
        args.append("--with-pydebug")
    if options.pgo:
        args.append("--enable-optimizations")
    if options.lto:
        # ThinLTO: parallel and far cheaper in memory than full LTO on 2 cores.
        args.append("--with-lto=thin")
    if options.freethreaded:
        args.append("--disable-gil")
    if minor >= (3, 14) and options.base != "debug":
        # clang 19's musttail: the interpreter's opcode handlers call each other.
        args.append("--with-tail-call-interp")
    return args


# Flags recorded in sysconfig, so they must make sense on a user's machine with gcc or
# clang: hardening only.
RECORDED_CFLAGS = "-fstack-protector-strong -D_FORTIFY_SOURCE=2 -fstack-clash-protection -fcf-protection"
RECORDED_LDFLAGS = "-Wl,-z,relro,-z,now -Wl,-z,noexecstack"


def compiler_env(options: BuildOptions, target: str) -> dict[str, str]:
    """Compiler variables for CPython's configure: build-only flags (sysroot, lld,
    our prefix, path mapping) in the *_NODIST variables sysconfig does not pass on."""
    env = toolchain.build_environment(target, jobs=1, source_date_epoch=0)
    return {
        "CC": env["CC"],
        "CXX": env["CXX"],
        "CFLAGS": RECORDED_CFLAGS,
        "LDFLAGS": RECORDED_LDFLAGS,
        "CPPFLAGS": f"-I{toolchain.PREFIX}/include",
        "CFLAGS_NODIST": f"-ffile-prefix-map={toolchain.WORK_DIR}=.",
        # --exclude-libs: nothing of a static library (OpenSSL's assembly routines
        # ignore -fvisibility=hidden) is exported from the interpreter, whose own
        # objects stay exported (-export-dynamic) for extension modules.
        "LDFLAGS_NODIST": f"-fuse-ld=lld -L{toolchain.PREFIX}/lib -Wl,--exclude-libs,ALL",
    }
