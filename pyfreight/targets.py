"""What each target is, in one place: every table about a target triple (the compiler's
triple, the ELF machine, the newest glibc symbol allowed, the libraries a binary may
need) is read from here."""

from __future__ import annotations

from dataclasses import dataclass

from pyfreight.errors import PyfreightError


@dataclass(frozen=True)
class Target:
    triple: str  # our name, as python-build-standalone's
    clang_triple: str
    elf_machine: str  # pyelftools' e_machine name
    glibc_max: tuple[int, int]  # the sysroot's glibc: no newer symbol version may be needed
    allowed_needed: frozenset[str]  # DT_NEEDED entries a shipped ELF file may have

    @property
    def glibc_text(self) -> str:
        return ".".join(map(str, self.glibc_max))


TARGETS = {
    t.triple: t
    for t in (
        Target(
            triple="x86_64-unknown-linux-gnu",
            clang_triple="x86_64-linux-gnu",
            elf_machine="EM_X86_64",
            glibc_max=(2, 31),  # Debian bullseye, the sysroot
            allowed_needed=frozenset(
                {
                    "libc.so.6",
                    "libm.so.6",
                    "libpthread.so.0",
                    "libdl.so.2",
                    "librt.so.1",
                    "libutil.so.1",
                    "ld-linux-x86-64.so.2",
                }
            ),
        ),
    )
}
DEFAULT_TARGET = "x86_64-unknown-linux-gnu"


def target(triple: str) -> Target:
    try:
        return TARGETS[triple]
    except KeyError:
        raise PyfreightError(f"unknown target {triple}; known: {', '.join(sorted(TARGETS))}") from None
