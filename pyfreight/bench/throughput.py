"""`pyfreight bench`: our pgo+lto and noopt builds side by side with Debian's own build
of the same CPython minor version, on a fixed subset of pyperformance run by pyperf
(cpython/bench.yaml). Every interpreter runs in the same Debian container with no
network; benchmarks are interleaved across interpreters so that drift of the
machine hits all of them alike. A benchmark command, not a test: it prints a table
and saves JSON under build/bench/."""

from __future__ import annotations

import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfreight.container import images
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.build import build_cpython
from pyfreight.cpython.relocate import installed_python_name
from pyfreight.cpython.versions import cpython_source
from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say, tail
from pyfreight.paths import REPO_ROOT, Workspace

SUITE_FILE = REPO_ROOT / "cpython" / "bench.yaml"
BENCHMARKS_IN_WHEEL = "pyperformance/data-files/benchmarks"
# Targets from the CPython issue: geometric means of time ratios.
TARGET_OVER_NOOPT = 1.15  # pgo+lto at least 15% faster than noopt
TARGET_OVER_DEBIAN = 1.0  # and at least as fast as Debian's build


@dataclass(frozen=True)
class Interpreter:
    label: str  # column heading: "pgo+lto", "noopt", "debian 3.14.8-1"
    python: str  # the command inside the container
    mount: tuple[Path, str] | None  # an install tree of ours and where it is mounted


def load_suite() -> dict[str, Any]:
    suite: dict[str, Any] = load_yaml(SUITE_FILE, "bench.schema.json")
    return suite


def ensure_tools(ws: Workspace, suite: dict) -> Path:
    """pyperf and pyperformance from their hash-pinned wheels, unpacked into a folder
    that goes on PYTHONPATH (nothing is installed into the interpreters measured)."""
    site = ws.build / "bench" / "site"
    stamp = site / ".wheels.json"
    wanted = json.dumps(suite["wheels"], sort_keys=True)
    if stamp.exists() and stamp.read_text() == wanted:
        return site
    say("bench: fetching pyperf and pyperformance (hash-pinned wheels)")
    ws.scratch.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("bench-wheels")) as tmp:
        requirements = Path(tmp) / "requirements.txt"
        requirements.write_text(
            "".join(f"{req} --hash=sha256:{sha}\n" for req, sha in sorted(suite["wheels"].items()))
        )
        wheels = Path(tmp) / "wheels"
        proc = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--no-deps",
             "--only-binary", ":all:", "--require-hashes", "-r", str(requirements), "-d", str(wheels)],
            capture_output=True, text=True,
        )  # fmt: skip
        if proc.returncode != 0:
            raise PyfreightError(f"pip could not fetch the benchmark wheels:\n{proc.stderr.strip()[-2000:]}")
        unpacked = Path(tmp) / "site"
        for wheel in sorted(wheels.glob("*.whl")):
            with zipfile.ZipFile(wheel) as zf:
                zf.extractall(unpacked)
        (unpacked / ".wheels.json").write_text(wanted)
        if site.exists():
            shutil.rmtree(site)
        site.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(unpacked, site)
    return site


def median_seconds(result_file: Path) -> dict[str, float]:
    """Median of every measured value (warm-ups excluded) per benchmark in a pyperf
    JSON file: a file can hold several benchmarks."""
    data = json.loads(result_file.read_text())
    medians = {}
    for bench in data["benchmarks"]:
        name = bench.get("metadata", {}).get("name") or data["metadata"]["name"]
        values = [v for run in bench["runs"] for v in run.get("values", ())]
        if not values:
            raise PyfreightError(f"{result_file}: benchmark {name} has no measured values")
        medians[name] = statistics.median(values)
    return medians


def geometric_mean(ratios: list[float]) -> float:
    return math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else float("nan")


def _run_one(
    image: str, site: Path, out_dir: Path, interp: Interpreter, name: str, spec: list[str], fast: bool,
    log: Path,
) -> Path:  # fmt: skip
    folder, *extra = spec
    result = out_dir / f"{name}--{interp.label.split()[0]}.json"
    result.unlink(missing_ok=True)
    script = f"/bench/{BENCHMARKS_IN_WHEEL}/{folder}/run_benchmark.py"
    command = [interp.python, script, "--inherit-environ", "PYTHONPATH", "-o", f"/out/{result.name}"]
    command += (["--fast"] if fast else []) + extra
    mounts = [Mount(site, "/bench"), Mount(out_dir, "/out", read_only=False)]
    if interp.mount:
        mounts.append(Mount(*interp.mount))
    run_spec = RunSpec(
        image=image,
        command=command,
        what=f"benchmark {name} on {interp.label}",
        output=log,
        mounts=mounts,
        env={"PYTHONPATH": "/bench", "HOME": "/tmp"},
        user=f"{os.getuid()}:{os.getgid()}",
        name_hint="bench",
    )
    run(run_spec)
    return result


def _format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def render_table(report: dict) -> str:
    labels = report["interpreters"]
    base = labels[0]
    others = labels[1:]
    head = f"{'benchmark':24}" + "".join(f"{lab:>18}" for lab in labels)
    head += "".join(f"{lab.split()[0] + '/' + base:>20}" for lab in others)
    lines = [head, "-" * len(head)]
    for name, row in report["results"].items():
        line = f"{name:24}" + "".join(f"{_format_time(row[lab]):>18}" for lab in labels)
        line += "".join(f"{row[lab] / row[base]:>19.2f}x" for lab in others)
        lines.append(line)
    lines.append("-" * len(head))
    for title, key in (("geometric mean", "geomean"), ("startup only", "startup")):
        line = f"{title:24}" + " " * (18 * len(labels))
        line += "".join(f"{report[key][lab]:>19.2f}x" for lab in others)
        lines.append(line)
    lines.append("(ratios: time of that build / time of ours with pgo+lto; above 1 means ours is faster)")
    for t in report["targets"]:
        lines.append(f"target: {t['what']}: {'met' if t['met'] else 'NOT MET'} ({t['value']:.2f}x)")
    return "\n".join(lines)


def _targets(report: dict) -> list[dict]:
    labels = report["interpreters"]
    found = [
        {
            "what": "pgo+lto at least 15% faster than noopt (geometric mean)",
            "value": report["geomean"]["noopt"],
            "met": report["geomean"]["noopt"] >= TARGET_OVER_NOOPT,
        }
    ]
    debian = next((lab for lab in labels if lab.startswith("debian")), None)
    if debian:
        found.append(
            {
                "what": f"pgo+lto at least as fast as {debian} (geometric mean)",
                "value": report["geomean"][debian],
                "met": report["geomean"][debian] >= TARGET_OVER_DEBIAN,
            }
        )
        found.append(
            {
                "what": f"start-up no slower than {debian}",
                "value": report["startup"][debian],
                "met": report["startup"][debian] >= TARGET_OVER_DEBIAN,
            }
        )
    return found


def run_bench(ws: Workspace, minor: str | None, target: str, jobs: int, only: list[str], fast: bool) -> Path:
    suite = load_suite()
    benchmarks: dict[str, list[str]] = suite["benchmarks"]
    unknown = [n for n in only if n not in benchmarks]
    if unknown:
        raise PyfreightError(f"no benchmark named {', '.join(unknown)}; known: {', '.join(benchmarks)}")
    chosen = {n: benchmarks[n] for n in (only or benchmarks)}
    src = cpython_source(minor)
    minor = ".".join(src.version.split(".")[:2])

    interpreters = []
    for options in ("pgo+lto", "noopt"):
        build = build_cpython(minor, options, target, ws, jobs=jobs)
        mount = f"/opt/{options.replace('+', '_')}"
        python = f"{mount}/bin/{installed_python_name(build.tree)}"
        interpreters.append(Interpreter(options, python, (build.tree, mount)))
    debian = images.ensure_debian_python_image(ws, minor)
    if debian:
        image, version = debian
        interpreters.append(Interpreter(f"debian {version}", f"/usr/bin/python{minor}", None))
    else:
        image = images.ensure_runtime_image(ws)
        say(f"bench: Debian serves no CPython {minor} (dockerfiles/images.yaml debian_python): ours only")
    site = ensure_tools(ws, suite)

    out_dir = ws.build / "bench" / f"cpython-{minor}"
    out_dir.mkdir(parents=True, exist_ok=True)
    log = ws.logs / f"bench-{minor}.log"
    log.write_text("")
    results: dict[str, dict[str, float]] = {}
    started = time.monotonic()
    for i, (name, spec) in enumerate(chosen.items(), 1):
        say(f"[{i:2}/{len(chosen)}] {name} (log: {log})")
        for interp in interpreters:
            try:
                result = _run_one(image, site, out_dir, interp, name, spec, fast, log)
            except PyfreightError as exc:
                raise PyfreightError(f"{exc}\n(last lines of {log}:\n{tail(log, 20)})") from None
            for bench_name, seconds in median_seconds(result).items():
                results.setdefault(bench_name, {})[interp.label] = seconds

    labels = [i.label for i in interpreters]
    startup = set(suite["startup"])

    def ratios(label: str, names: set[str] | None = None) -> float:
        return geometric_mean(
            [row[label] / row["pgo+lto"] for n, row in results.items() if names is None or n in names]
        )

    report = {
        "python": src.version,
        "interpreters": labels,
        "fast": fast,
        "results": results,
        "geomean": {lab: ratios(lab) for lab in labels},
        "startup": {lab: ratios(lab, startup) for lab in labels},
        "seconds": round(time.monotonic() - started),
    }
    report["targets"] = _targets(report)
    json_path = ws.build / "bench" / f"bench-{minor}.json"
    tmp = json_path.with_name(f"{owned(f'.{json_path.name}')}part")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(json_path)
    table = render_table(report)
    json_path.with_suffix(".txt").write_text(table + "\n")
    print(table)
    return json_path
