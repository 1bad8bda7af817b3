"""Saved training profiles (pgo.profdata, bolt.fdata): what a rebuild without training is
handed, and what is refused before any container starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyfreight.cpython.build import _cpython_job
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.profiles import SavedProfiles
from pyfreight.cpython.spec import BuildSpec
from pyfreight.cpython.versions import cpython_source
from pyfreight.errors import PyfreightError
from pyfreight.targets import default_target, target

INDEXED_MAGIC = (0x8169666F72706CFF).to_bytes(8, "little")  # llvm/ProfileData/InstrProf.h
# A line of merge-fdata's output: branch from, branch to, mispredictions, count.
FDATA = b"1 _PyEval_Vector 1a 1 _PyEval_Vector 30 0 12\n"


@pytest.fixture
def pgo(tmp_path: Path) -> Path:
    path = tmp_path / "pgo.profdata"
    path.write_bytes(INDEXED_MAGIC + b"\0" * 56)
    return path


@pytest.fixture
def bolt(tmp_path: Path) -> Path:
    path = tmp_path / "bolt.fdata"
    path.write_bytes(FDATA)
    return path


def _spec(options: str, triple: str = "x86_64-unknown-linux-gnu") -> BuildSpec:
    return BuildSpec.resolve("3.14", options, target(triple))


def _job(options: str, profiles: SavedProfiles | None):
    source, target = cpython_source("3.14"), default_target()
    return _cpython_job(source, BuildOptions.parse(options), target, "# Setup\n", True, {}, profiles, None)


def test_a_bolted_build_is_handed_both_profiles(pgo: Path, bolt: Path):
    profiles = SavedProfiles(pgo, bolt)
    profiles.check(_spec("pgo+lto"))
    job = _job("pgo+lto", profiles)
    assert job.files["pgo.profdata"] == pgo and job.files["bolt.fdata"] == bolt
    assert job.env["PGO_PROFILE"] == "/inputs/recipe/pgo.profdata"
    assert job.env["BOLT_PROFILE"] == "/inputs/recipe/bolt.fdata"


def test_a_pgo_build_is_handed_its_profile_alone(pgo: Path):
    for options in ("pgo+lto+nobolt", "pgo+lto"):  # the second trains BOLT again
        job = _job(options, SavedProfiles(pgo))
        assert "bolt.fdata" not in job.files and "BOLT_PROFILE" not in job.env
    trained = _job("pgo+lto", None)
    assert trained.env["PGO_PROFILE"] == "" and "pgo.profdata" not in trained.files


def test_profiles_that_cannot_rebuild_the_options_are_refused(tmp_path: Path, pgo: Path, bolt: Path):
    with pytest.raises(PyfreightError, match="--pgo-profile is for pgo builds"):
        SavedProfiles(pgo).check(_spec("lto"))
    unbolted = r"--bolt-profile is for builds llvm-bolt lays out; pgo\+lto\+nobolt for x86_64"
    with pytest.raises(PyfreightError, match=unbolted):
        SavedProfiles(pgo, bolt).check(_spec("pgo+lto+nobolt"))
    with pytest.raises(PyfreightError, match=r"pgo\+lto for aarch64-unknown-linux-gnu is not one"):
        SavedProfiles(pgo, bolt).check(_spec("pgo+lto", "aarch64-unknown-linux-gnu"))
    SavedProfiles(pgo).check(_spec("pgo+lto"))  # BOLT trains again
    with pytest.raises(PyfreightError, match="does not exist"):
        SavedProfiles(pgo, tmp_path / "missing.fdata").check(_spec("pgo+lto"))
    binary = tmp_path / "binary.fdata"
    binary.write_bytes(b"\x7fELF\0\0\0")
    with pytest.raises(PyfreightError, match="is not a BOLT profile"):
        SavedProfiles(pgo, binary).check(_spec("pgo+lto"))
    empty = tmp_path / "empty.fdata"
    empty.write_bytes(b"")
    with pytest.raises(PyfreightError, match="0 bytes is not a BOLT profile"):
        SavedProfiles(pgo, empty).check(_spec("pgo+lto"))
    text = tmp_path / "text.profdata"
    text.write_bytes(FDATA)
    with pytest.raises(PyfreightError, match="is not an indexed LLVM profile"):
        SavedProfiles(text, bolt).check(_spec("pgo+lto"))


def test_a_pgo_profile_is_only_for_pgo_builds(pgo: Path):
    with pytest.raises(PyfreightError, match="lto does not use a profile"):
        SavedProfiles(pgo).check(_spec("lto"))
    SavedProfiles(pgo).check(_spec("pgo+lto"))  # accepted
    SavedProfiles(pgo).check(_spec("freethreaded+pgo"))


def test_a_missing_pgo_profile_is_named(tmp_path: Path):
    with pytest.raises(PyfreightError, match=r"nope\.profdata does not exist"):
        SavedProfiles(tmp_path / "nope.profdata").check(_spec("pgo"))


def test_a_raw_or_foreign_pgo_profile_is_refused(tmp_path: Path):
    raw = tmp_path / "code-1.profclangr"  # a raw profile, not llvm-profdata merge output
    raw.write_bytes((0xFF6C70726F667281).to_bytes(8, "little") + b"\0" * 64)
    with pytest.raises(PyfreightError, match="not an indexed LLVM profile"):
        SavedProfiles(raw).check(_spec("pgo"))
