"""Which build of a release uv is pointed at, per variant (the archives themselves are
tests/test_release_integration.py's)."""

from __future__ import annotations

import pytest

from pyfreight.cpython.options import BuildOptions
from pyfreight.publish.release import _uv_variant


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ("pgo+lto", ("", 0)),
        ("lto", ("", 1)),
        ("noopt", ("", 3)),
        ("freethreaded+pgo+lto", ("freethreaded", 0)),
        ("freethreaded+noopt", ("freethreaded", 3)),
        ("debug", ("debug", 0)),
        ("lto+static", None),
        ("pgo+lto+pie", None),
    ],
)
def test_uv_gets_the_fastest_build_of_each_variant_and_no_modified_one(options, expected):
    assert _uv_variant(BuildOptions.parse(options)) == expected
