"""The in-container check that every .pyc of a stdlib is checked-hash and compiled from
the text beside it (pyfreight/in_container/bytecode.py), run here by the host's Python
on bytecode it compiles itself."""

from __future__ import annotations

import py_compile
from pathlib import Path

import pytest

from pyfreight.in_container.bytecode import bytecode_check, stale_bytecode


def _module(stdlib: Path, name: str, text: str, mode: py_compile.PycInvalidationMode) -> Path:
    source = stdlib / f"{name}.py"
    source.parent.mkdir(parents=True, exist_ok=True)
    source.write_text(text)
    for level in (0, 1, 2):
        py_compile.compile(str(source), optimize=level, invalidation_mode=mode, doraise=True)
    return source


CHECKED = py_compile.PycInvalidationMode.CHECKED_HASH


def test_matching_checked_hash_bytecode_passes(tmp_path):
    _module(tmp_path, "a", "A = 1\n", CHECKED)
    _module(tmp_path, "pkg/b", "B = 2\n", CHECKED)
    assert stale_bytecode(tmp_path) == (6, [])


def test_bytecode_of_an_earlier_text_is_found(tmp_path):
    """What the relocated _sysconfigdata had: its text rewritten after compiling."""
    source = _module(tmp_path, "_sysconfigdata_x", "PREFIX = '/install'\n", CHECKED)
    source.write_text("PREFIX = sys.base_prefix\n")
    count, problems = stale_bytecode(tmp_path)
    assert count == 3 and len(problems) == 3
    assert all(p.endswith("compiled from another text than _sysconfigdata_x.py") for p in problems)
    assert problems[0].startswith("__pycache__/_sysconfigdata_x.")


def test_bytecode_stamped_with_file_times_is_found(tmp_path):
    _module(tmp_path, "a", "A = 1\n", py_compile.PycInvalidationMode.TIMESTAMP)
    count, problems = stale_bytecode(tmp_path)
    assert count == 3 and all(p.endswith(": not checked-hash") for p in problems)


def test_bytecode_without_a_source_is_not_judged(tmp_path):
    source = _module(tmp_path, "gone", "G = 1\n", CHECKED)
    source.unlink()
    assert stale_bytecode(tmp_path) == (0, [])


def test_the_check_line_names_the_problems(tmp_path):
    source = _module(tmp_path, "a", "A = 1\n", CHECKED)
    source.write_text("A = 2\n")
    with pytest.raises(AssertionError, match=r"^3 stale \.pyc files: __pycache__/a\."):
        bytecode_check(tmp_path)
