"""Comparing two archives and reading archive names (the rebuild itself is proven by
the container test of the distribution)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import write_tar
from pyfreight.pipeline.reproduce import compare, parse_name


def _archive(tmp_path: Path, name: str, files: dict[str, str]) -> Path:
    folder = tmp_path / f"src-{name}"
    folder.mkdir()
    for rel, text in files.items():
        (folder / rel).write_text(text)
    out = tmp_path / name
    write_tar(out, [(f"python/{rel}", folder / rel) for rel in files], epoch=0, compression="zst")
    return out


def test_names_are_parsed():
    spec, release = parse_name(
        Path("cpython-3.15.0rc1+20260901-x86_64-unknown-linux-gnu-freethreaded+pgo+lto-full.tar.zst")
    )
    assert release == "20260901"
    assert (spec.version, spec.minor, spec.target.triple) == ("3.15.0rc1", "3.15", "x86_64-unknown-linux-gnu")
    assert (spec.options.freethreaded, spec.options.pgo, spec.options.lto) == (True, True, True)
    # an unknown target in a well-formed name is named, not guessed
    with pytest.raises(PyfreightError, match="unknown target 'sparc-unknown-linux-gnu'"):
        parse_name(Path("cpython-3.14.7+20260805-sparc-unknown-linux-gnu-noopt-full.tar.zst"))
    with pytest.raises(PyfreightError, match="not a full archive name"):
        parse_name(Path("cpython-3.14.7+20260805-x86_64-unknown-linux-gnu-install_only.tar.gz"))


def test_identical_archives(tmp_path):
    a = _archive(tmp_path, "a.tar.zst", {"PYTHON.json": "{}", "x.txt": "1"})
    b = _archive(tmp_path, "b.tar.zst", {"PYTHON.json": "{}", "x.txt": "1"})
    assert compare(a, b).identical


def test_first_differing_member_is_named(tmp_path):
    a = _archive(tmp_path, "a.tar.zst", {"PYTHON.json": "{}", "x.txt": "1", "y.txt": "1"})
    b = _archive(tmp_path, "b.tar.zst", {"PYTHON.json": "{}", "x.txt": "2", "y.txt": "2"})
    result = compare(a, b)
    assert not result.identical and result.first_difference == "python/x.txt"
