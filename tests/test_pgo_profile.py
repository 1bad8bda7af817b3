"""A saved PGO profile is checked before any build starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyfreight.cpython.build import _check_profile
from pyfreight.cpython.options import BuildOptions
from pyfreight.errors import PyfreightError

INDEXED_MAGIC = (0x8169666F72706CFF).to_bytes(8, "little")  # llvm/ProfileData/InstrProf.h


def test_a_profile_is_only_for_pgo_builds(tmp_path: Path):
    profile = tmp_path / "p.profdata"
    profile.write_bytes(INDEXED_MAGIC + b"\0" * 64)
    with pytest.raises(PyfreightError, match="lto does not use a profile"):
        _check_profile(BuildOptions.parse("lto"), profile)
    _check_profile(BuildOptions.parse("pgo+lto"), profile)  # accepted
    _check_profile(BuildOptions.parse("freethreaded+pgo"), profile)


def test_missing_profile_is_named(tmp_path: Path):
    with pytest.raises(PyfreightError, match=r"nope\.profdata does not exist"):
        _check_profile(BuildOptions.parse("pgo"), tmp_path / "nope.profdata")


def test_raw_or_foreign_file_is_refused(tmp_path: Path):
    raw = tmp_path / "code-1.profclangr"  # a raw profile, not llvm-profdata merge output
    raw.write_bytes((0xFF6C70726F667281).to_bytes(8, "little") + b"\0" * 64)
    with pytest.raises(PyfreightError, match="not an indexed LLVM profile"):
        _check_profile(BuildOptions.parse("pgo"), raw)
