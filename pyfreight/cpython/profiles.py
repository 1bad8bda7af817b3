"""What a pgo build learned from its training runs, kept beside its tree and in its full
archive so that the same build can be made again without training (`reproduce`,
`pyfreight build --pgo-profile`): training is not deterministic, a build from saved
profiles is."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError

# Names in the full archive's python/build/ and inside the build container's inputs.
PGO_PROFILE_NAME = "pgo.profdata"
BOLT_PROFILE_NAME = "bolt.fdata"
# llvm-profdata's indexed format: the 64-bit magic 0x8169666f72706cff, little-endian.
INDEXED_PROFILE_MAGIC = b"\xfflprofi\x81"
# merge-fdata's output is text; a real one is a few MB, a larger file is not one.
BOLT_PROFILE_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class SavedProfiles:
    """The merged PGO profile, and for a build llvm-bolt lays out (BuildSpec.bolt)
    llvm-bolt's merged profile of the PGO-built interpreter (its addresses are that
    binary's, so it only fits the build the PGO profile makes). Such a build given the PGO
    profile alone trains BOLT again."""

    pgo: Path
    bolt: Path | None = None

    def check(self, spec: BuildSpec) -> None:
        """One line naming the file and the fix when these cannot rebuild `spec`."""
        options = spec.options
        if not options.pgo:
            raise PyfreightError(f"--pgo-profile is for pgo builds; {options} does not use a profile")
        if self.bolt is not None and not spec.bolt:
            raise PyfreightError(
                f"--bolt-profile is for builds llvm-bolt lays out; {options} for {spec.target.triple} "
                "is not one"
            )
        if not self.pgo.is_file():
            raise PyfreightError(f"PGO profile {self.pgo} does not exist (give a .profdata a pgo build kept)")
        with self.pgo.open("rb") as fh:
            if fh.read(8) != INDEXED_PROFILE_MAGIC:
                raise PyfreightError(
                    f"{self.pgo} is not an indexed LLVM profile (llvm-profdata merge output); "
                    "give the .profdata file a pgo build kept beside its install tree"
                )
        if self.bolt is not None:
            _check_bolt_profile(self.bolt)


def _check_bolt_profile(path: Path) -> None:
    if not path.is_file():
        raise PyfreightError(f"BOLT profile {path} does not exist (give the .fdata a bolt build kept)")
    size = path.stat().st_size
    if size == 0 or size > BOLT_PROFILE_MAX_BYTES:
        raise PyfreightError(f"{path}: {size} bytes is not a BOLT profile (merge-fdata output) a build kept")
    with path.open("rb") as fh:
        head = fh.read(4096)
    if not head.isascii() or b"\0" in head:
        raise PyfreightError(
            f"{path} is not a BOLT profile (merge-fdata's text output); give the .fdata a bolt build kept"
        )
