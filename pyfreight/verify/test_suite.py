"""cpython/test-suite.yaml: what `pyfreight check-install` runs of CPython's own test
suite (the default subset, and the cases skipped in every run, with the reasons)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyfreight.datafiles import load_yaml
from pyfreight.paths import REPO_ROOT

TEST_SUITE_FILE = REPO_ROOT / "cpython" / "test-suite.yaml"


def load_test_suite(path: Path = TEST_SUITE_FILE) -> dict[str, Any]:
    """{"subset": [test module, ...], "ignore": {pattern: reason}}, checked against
    schema/test-suite.schema.json."""
    suite: dict[str, Any] = load_yaml(path, "test-suite.schema.json")
    return suite
