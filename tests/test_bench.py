"""The arithmetic and reading of `pyfreight bench` (the runs themselves are a
command, not a test)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pyfreight.bench.throughput import _targets, geometric_mean, load_suite, median_seconds, render_table
from pyfreight.errors import PyfreightError


def _pyperf_file(path: Path, benchmarks: dict[str, list[list[float]]]) -> Path:
    """A result file in pyperf's JSON layout: per benchmark, runs holding warm-ups
    ([loops, value] pairs) and values; the first run is a calibration run without values."""
    data = {
        "version": "1.0",
        "metadata": {"python_version": "3.14.7"},
        "benchmarks": [
            {
                "metadata": {"name": name},
                "runs": [{"metadata": {"calibrate_loops": 8}, "warmups": [[1, 9.0]]}]
                + [{"warmups": [[8, 100.0]], "values": values} for values in runs],
            }
            for name, runs in benchmarks.items()
        ],
    }
    path.write_text(json.dumps(data))
    return path


def test_median_ignores_warmups_and_calibration(tmp_path: Path):
    f = _pyperf_file(tmp_path / "r.json", {"nbody": [[0.3, 0.1], [0.2]], "go": [[5.0, 7.0]]})
    assert median_seconds(f) == {"nbody": 0.2, "go": 6.0}


def test_a_benchmark_without_values_is_an_error(tmp_path: Path):
    f = _pyperf_file(tmp_path / "r.json", {"nbody": []})
    with pytest.raises(PyfreightError, match="nbody has no measured values"):
        median_seconds(f)


def test_geometric_mean():
    assert geometric_mean([2.0, 8.0]) == pytest.approx(4.0)
    assert geometric_mean([1.0]) == 1.0


def _report(noopt: float, debian: float) -> dict:
    report = {
        "interpreters": ["pgo+lto", "noopt", "debian 3.14.8-1"],
        "results": {"nbody": {"pgo+lto": 1.0, "noopt": noopt, "debian 3.14.8-1": debian}},
        "geomean": {"pgo+lto": 1.0, "noopt": noopt, "debian 3.14.8-1": debian},
        "startup": {"pgo+lto": 1.0, "noopt": 1.0, "debian 3.14.8-1": debian},
    }
    report["targets"] = _targets(report)
    return report


def test_targets_met_and_missed():
    met = _report(noopt=1.3, debian=1.05)
    assert [t["met"] for t in met["targets"]] == [True, True, True]
    missed = _report(noopt=1.1, debian=0.9)
    assert [t["met"] for t in missed["targets"]] == [False, False, False]
    table = render_table(missed)
    assert "NOT MET (1.10x)" in table and "NOT MET (0.90x)" in table


def test_suite_names_its_startup_benchmarks():
    suite = load_suite()
    assert set(suite["startup"]) <= set(suite["benchmarks"])
    assert all(spec[0].startswith("bm_") for spec in suite["benchmarks"].values())
