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


def _report(noopt: float, debian: float, startup: float, debian_faults: int = 950) -> dict:
    """Times in seconds: ours 1.0 everywhere; the others as given. Ours start with 900
    page faults and 10 MiB."""
    d = "debian 3.14.8-1"
    report = {
        "interpreters": ["pgo+lto", "noopt", d],
        "results": {
            "nbody": {"pgo+lto": 1.0, "noopt": noopt, d: debian},
            "python_startup": {"pgo+lto": 1.0, "noopt": noopt, d: startup},
        },
        "geomean": {"pgo+lto": 1.0, "noopt": noopt, d: debian},
        "startup": {"pgo+lto": 1.0, "noopt": 1.0, d: startup},
        "startup_names": ["python_startup"],
        "probe": {
            label: {
                "facts": {"pie": label != d},
                "startup": {
                    "python -c pass": {
                        "peak_rss_kib": 10240 if label != d else 9216,
                        "minor_faults": 900 if label != d else debian_faults,
                        "major_faults": 0,
                    }
                },
            }
            for label in ("pgo+lto", "noopt", d)
        },
    }
    report["targets"] = _targets(report)
    return report


def test_targets_met_and_missed():
    met = _report(noopt=1.3, debian=1.09, startup=1.06)
    # Debian's peak RSS (9 MiB) is below ours (10 MiB): the one target missed
    assert [t["met"] for t in met["targets"]] == [True, True, True, True, False, True]
    # 8% faster than Debian is the bar, start-up at most 0.95x of Debian's time, no more
    # page faults or RSS at start, and no benchmark more than 10% slower
    missed = _report(noopt=1.1, debian=1.07, startup=1.04, debian_faults=899)
    assert [t["met"] for t in missed["targets"]] == [False, False, False, False, False, True]
    missed = _report(noopt=1.1, debian=0.85, startup=1.04, debian_faults=899)
    assert [t["met"] for t in missed["targets"]] == [False, False, False, False, False, False]
    table = render_table(missed)
    assert "NOT MET (1.10x)" in table and "NOT MET (0.85x)" in table
    assert "python -c pass: page faults at most debian 3.14.8-1's: NOT MET (900 against 899)" in table
    assert "python -c pass: peak RSS at most debian 3.14.8-1's: NOT MET (10240 against 9216)" in table
    assert "python_startup at most 0.95x debian 3.14.8-1's time: NOT MET (0.96x)" in table
    assert "no benchmark more than 10% slower than debian 3.14.8-1: NOT MET (nbody)" in table
    assert "10.0 MiB" in table


def test_suite_names_its_startup_benchmarks():
    suite = load_suite()
    assert set(suite["startup"]) <= set(suite["benchmarks"])
    assert all(spec[0].startswith("bm_") for spec in suite["benchmarks"].values())


def test_against_needs_an_install_tree(tmp_path: Path):
    from pyfreight.bench.interpreters import against

    with pytest.raises(PyfreightError, match="is not a folder"):
        against(str(tmp_path / "missing"), 0)
    with pytest.raises(PyfreightError, match="has no bin/ folder"):
        against(str(tmp_path), 0)
    (tmp_path / "bin").mkdir()
    with pytest.raises(PyfreightError, match=r"no bin/python3\.X"):
        against(str(tmp_path), 0)
    tree = tmp_path / "pbs" / "python" / "install"
    (tree / "bin").mkdir(parents=True)
    (tree / "lib" / "python3.14").mkdir(parents=True)
    named = against(f"pbs={tree}", 1)
    assert (named.label, named.python) == ("pbs", "/opt/against1/bin/python3.14")
    # an extracted archive's python/install is named by the folder holding it
    assert against(str(tree), 2).label == "python"
    with pytest.raises(PyfreightError, match="with ':'"):
        weird = tmp_path / "a:b"
        (weird / "bin").mkdir(parents=True)
        (weird / "lib" / "python3.14").mkdir(parents=True)
        against(str(weird), 3)


def test_the_library_rows_are_the_scripts_and_name_no_benchmark():
    """cpython/bench.yaml lists the C-library rows that in_container/bench_libraries.py
    defines, each once, and none shares a name (or a result file) with a pyperformance row."""
    from pyfreight.in_container import bench_libraries

    suite = load_suite()
    assert suite["libraries"] == list(bench_libraries.benchmarks())
    assert not set(suite["libraries"]) & set(suite["benchmarks"])


def test_every_library_row_runs_here():
    """Each row's input is made and its call returns on this interpreter (the driver's),
    except zstd where the driver's CPython has no compression.zstd."""
    from pyfreight.in_container import bench_libraries

    ran = []
    for name, prepare in bench_libraries.benchmarks().items():
        try:
            call = prepare()
        except ImportError:
            assert name.startswith("zstd_"), name
            continue
        assert call() is not None, name
        ran.append(name)
    assert {"zlib_decompress", "ssl_handshake", "ssl_transfer", "expat_parse", "decimal_functions"} <= set(
        ran
    )


def test_the_library_table_and_its_targets():
    d = "debian 3.14.8-1"
    report = _report(noopt=1.3, debian=1.09, startup=1.06)
    report["libraries"] = {
        "zlib_decompress": {"pgo+lto": 1.0, "noopt": 1.0, d: 0.96},
        "zstd_decompress": {"pgo+lto": 1.0, "noopt": 1.0, d: 0.99},
        "hash_sha256": {"pgo+lto": 1.0, "noopt": 1.0, d: 1.2},
    }
    report["libraries_geomean"] = {"pgo+lto": 1.0, "noopt": 1.0, d: 1.04}
    report["targets"] = _targets(report)
    table = render_table(report)
    assert "C libraries" in table and "hash_sha256" in table
    # zlib 0.96x is below 0.97x; zstd 0.99x below 1.00x; sha256 1.20x is fine
    assert (
        "every C-library row at least 0.97x debian 3.14.8-1's speed: NOT MET (zlib_decompress 0.96x)" in table
    )
    assert "zstd_decompress at least 1.00x debian 3.14.8-1's speed: NOT MET (0.99x)" in table
    report["libraries"]["zlib_decompress"][d] = 0.98
    report["libraries"]["zstd_decompress"][d] = 1.01
    assert [t["met"] for t in _targets(report)][-2:] == [True, True]


def test_a_library_table_alone_judges_only_the_libraries():
    d = "debian 3.14.8-1"
    report = {
        "interpreters": ["pgo+lto", d],
        "results": {},
        "geomean": {"pgo+lto": float("nan"), d: float("nan")},
        "startup": {"pgo+lto": float("nan"), d: float("nan")},
        "startup_names": ["python_startup"],
        "probe": {},
        "libraries": {"zstd_decompress": {"pgo+lto": 1.0, d: 1.1}},
        "libraries_geomean": {"pgo+lto": 1.0, d: 1.1},
    }
    assert [t["what"] for t in _targets(report)] == [
        f"every C-library row at least 0.97x {d}'s speed",
        f"zstd_decompress at least 1.00x {d}'s speed",
    ]
    assert "geometric mean" in render_table(report) and "startup only" not in render_table(report)
