"""The archive flavours of a distribution, in one place: their names (those of
python-build-standalone, which installers already parse), compression, where the
install tree sits inside, and how each is recognised from its content alone.

The archives are written by archives/write.py; validate, test-dist, reproduce and release
ask here what an archive is (cpython/naming.py makes and parses the names)."""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

from pyfreight.cpython.naming import archive_name
from pyfreight.cpython.spec import BuildSpec
from pyfreight.platforms import LAYOUTS

PYTHON_JSON = "python/PYTHON.json"


@dataclass(frozen=True)
class Flavour:
    name: str  # "full", "install_only", "install_only_stripped"
    compression: str  # "zst" or "gz", as formats.tarball writes it
    install_root: str  # the install tree's folder inside the archive
    describes_itself: bool  # carries PYTHON.json, the build folder, licenses and the SBOM
    has_test_package: bool = True  # the stdlib's test package (CPython's test suite)

    @property
    def suffix(self) -> str:
        return f".tar.{self.compression}"

    def file_name(self, spec: BuildSpec, release: str) -> str:
        """The archive's name (cpython/naming.py makes every name of a build)."""
        return archive_name(spec, release, self.name, self.suffix, full=self.describes_itself)


FULL = Flavour("full", "zst", "python/install", describes_itself=True)
INSTALL_ONLY = Flavour("install_only", "gz", "python", describes_itself=False)
INSTALL_ONLY_STRIPPED = Flavour(
    "install_only_stripped", "gz", "python", describes_itself=False, has_test_package=False
)
FLAVOURS = (FULL, INSTALL_ONLY, INSTALL_ONLY_STRIPPED)


def recognise(names: Sequence[str]) -> Flavour | None:
    """The flavour of an archive from its member names, or None when it is none of
    ours (no PYTHON.json, and no tree at python/: neither python/bin/ nor
    python/python.exe). The stdlib's own test package tells install_only, which keeps
    it, from the stripped flavour, which does not."""
    if PYTHON_JSON in names:
        return FULL
    for layout in LAYOUTS:
        marker = f"python/{layout.marker}"
        if any(n == marker or n.startswith(f"{marker}/") for n in names):
            has_tests = any(layout.test_package.fullmatch(n) for n in names)
            return INSTALL_ONLY if has_tests else INSTALL_ONLY_STRIPPED
    return None


def release_tag(epoch: int) -> str:
    """YYYYMMDD (UTC) of the source release's newest file: the default {release}."""
    return datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y%m%d")
