"""`pyfreight bench`: builds of ours side by side with Debian's own build of the same
CPython minor version (and any install tree given with --against), on pyperformance's
benchmarks run by pyperf: a fixed subset (cpython/bench.yaml) or the whole default
suite. Every interpreter runs in the same Debian container with no network;
benchmarks are interleaved across interpreters so that drift of the machine hits all
of them alike. A benchmark command, not a test: it prints a table and saves JSON
under build/bench/."""

from __future__ import annotations

import json
import math
import statistics
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pyfreight.bench.interpreters import PROBE_MOUNT, Interpreter, against, ours, probe, this_machines_runner
from pyfreight.bench.suite import BENCHMARKS_IN_WHEEL, ensure_tools, full_suite, load_suite
from pyfreight.container import images
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.naming import bench_names
from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say, tail
from pyfreight.paths import IN_CONTAINER_DIR, REPO_ROOT, Workspace
from pyfreight.runners import runner_for

# Targets of the performance issue, as time ratios (theirs / ours; above 1: ours faster).
TARGET_OVER_NOOPT = 1.15  # geometric mean: at least 15% faster than our noopt
TARGET_OVER_DEBIAN = 1.08  # geometric mean: at least 8% faster than Debian's build (issue 39)
TARGET_STARTUP_OVER_DEBIAN = 1 / 0.95  # each start-up benchmark at most 0.95x Debian's time
WORST_OVER_DEBIAN = 1 / 1.10  # no benchmark more than 10% slower than Debian's
LIBRARY_OVER_DEBIAN = 0.97  # every C-library row at least 0.97x Debian's speed (issue 62)
ZSTD_DECOMPRESS_OVER_DEBIAN = 1.00  # and zstd's decompression at least as fast
STARTUP_PROBE_RUNS = 20


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


@dataclass(frozen=True)
class Benchmark:
    """One benchmark script as the container sees it: the folder it is mounted in, its
    path below that folder, and its arguments; and the table its rows belong to."""

    table: Literal["interpreter", "libraries"]  # pyperformance's, or in_container/bench_libraries.py's
    mounted_at: str
    script: str
    args: tuple[str, ...] = ()


def pyperformance_benchmark(spec: list[str]) -> Benchmark:
    folder, *extra = spec
    return Benchmark(
        "interpreter", "/bench", f"{BENCHMARKS_IN_WHEEL}/{folder}/run_benchmark.py", tuple(extra)
    )


def library_benchmark(name: str) -> Benchmark:
    return Benchmark("libraries", PROBE_MOUNT, "bench_libraries.py", (name,))


def _run_one(
    image: str, site: Path, out_dir: Path, interp: Interpreter, column: int, name: str, bench: Benchmark,
    fast: bool, log: Path,
) -> Path:  # fmt: skip
    result = out_dir / f"{name}--{column}.json"
    result.unlink(missing_ok=True)
    # Each program is given the files by its own names of them (a Windows one, Wine's).
    path = interp.runner.program_name
    script = path(bench.mounted_at, bench.script)
    command = [interp.python, script, "--inherit-environ", "PYTHONPATH", "-o", path("/out", result.name)]
    command += (["--fast"] if fast else []) + list(bench.args)
    mounts = [
        Mount(site, "/bench"),
        Mount(IN_CONTAINER_DIR, PROBE_MOUNT),
        Mount(out_dir, "/out", read_only=False),
    ]
    if interp.mount:
        mounts.append(interp.mount)
    invocation = interp.runner.invocation(command, {"PYTHONPATH": path("/bench", "").rstrip("/\\")})
    run_spec = RunSpec(
        image=image,
        command=invocation.command,
        what=f"benchmark {name} on {interp.label}",
        output=log,
        mounts=mounts,
        env=invocation.env,
        user=invocation.user,
        name_hint="bench",
    )
    run(run_spec)
    if not result.exists():
        raise PyfreightError(f"benchmark {name} on {interp.label} wrote no result ({result})")
    return result


def _format_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _ratio_table(
    labels: list[str], results: dict[str, dict[str, float]], summary: dict[str, dict]
) -> list[str]:
    """Times per benchmark and interpreter, each column's ratio to the first, and a
    line per summary (title: {label: geometric mean of ratios})."""
    base, others = labels[0], labels[1:]
    width = max(18, *(len(lab) + 2 for lab in labels))
    head = f"{'benchmark':26}" + "".join(f"{lab:>{width}}" for lab in labels)
    head += "".join(f"{lab + '/' + base:>{len(lab) + len(base) + 4}}" for lab in others)
    lines = [head, "-" * len(head)]
    for name, row in results.items():
        line = f"{name:26}" + "".join(
            f"{_format_time(row[lab]) if lab in row else '-':>{width}}" for lab in labels
        )
        line += "".join(
            f"{row[lab] / row[base]:>{len(lab) + len(base) + 3}.2f}x"
            if lab in row and base in row
            else f"{'-':>{len(lab) + len(base) + 4}}"
            for lab in others
        )
        lines.append(line)
    lines.append("-" * len(head))
    for title, means in summary.items():
        line = f"{title:26}" + " " * (width * len(labels))
        line += "".join(f"{means[lab]:>{len(lab) + len(base) + 3}.2f}x" for lab in others)
        lines.append(line)
    return lines


def render_table(report: dict) -> str:
    labels = report["interpreters"]
    base = labels[0]
    lines: list[str] = []
    if report["results"]:
        summary = {"geometric mean": report["geomean"], "startup only": report["startup"]}
        lines += _ratio_table(labels, report["results"], summary)
    if report.get("libraries"):
        if lines:
            lines.append("")
        lines.append("C libraries (in_container/bench_libraries.py)")
        lines += _ratio_table(labels, report["libraries"], {"geometric mean": report["libraries_geomean"]})
    lines.append(f"(ratios: time of that interpreter / time of {base}; above 1 means {base} is faster)")
    if not report["probe"]:
        return "\n".join(lines)
    lines.append("")
    title = f"start-up, median of {STARTUP_PROBE_RUNS} runs"
    lines.append(f"{title:40}{'peak RSS':>12}{'minor faults':>14}{'PIE':>6}")
    for lab in labels:
        facts = report["probe"][lab]
        for command, use in facts["startup"].items():
            pie = {True: "yes", False: "no", None: "?"}[facts["facts"]["pie"]]
            rss = f"{use['peak_rss_kib'] / 1024:.1f} MiB"
            lines.append(f"{lab + ': ' + command:40}{rss:>12}{use['minor_faults']:>14.0f}{pie:>6}")
    for t in report["targets"]:
        lines.append(f"target: {t['what']}: {'met' if t['met'] else 'NOT MET'} ({t['value']})")
    return "\n".join(lines)


def _targets(report: dict) -> list[dict]:
    """The issue's targets, for the first column against noopt and Debian's build when
    those are in the run."""
    labels = report["interpreters"]
    base = labels[0]
    found = []
    if "noopt" in labels[1:] and report["results"]:
        value = report["geomean"]["noopt"]
        found.append(
            {"what": f"{base} at least 1.15x noopt (geometric mean)", "value": f"{value:.2f}x",
             "met": value >= TARGET_OVER_NOOPT}
        )  # fmt: skip
    debian = next((lab for lab in labels if lab.startswith("debian")), None)
    if debian and report["results"]:
        value = report["geomean"][debian]
        found.append(
            {"what": f"{base} at least {TARGET_OVER_DEBIAN:.2f}x {debian} (geometric mean)",
             "value": f"{value:.2f}x", "met": value >= TARGET_OVER_DEBIAN}
        )  # fmt: skip
        for name in report["startup_names"]:
            row = report["results"].get(name)
            if row and debian in row:
                value = row[base] / row[debian]
                found.append(
                    {"what": f"{name} at most 0.95x {debian}'s time", "value": f"{value:.2f}x",
                     "met": value <= 1 / TARGET_STARTUP_OVER_DEBIAN}
                )  # fmt: skip
        for command, ours_use in report["probe"][base]["startup"].items():
            theirs = report["probe"][debian]["startup"].get(command)
            if theirs is None:
                continue
            # the memory a start-up costs: no more pages touched, no larger peak
            for key, unit in (("minor_faults", "page faults"), ("peak_rss_kib", "peak RSS")):
                found.append(
                    {"what": f"{command}: {unit} at most {debian}'s",
                     "value": f"{ours_use[key]:.0f} against {theirs[key]:.0f}",
                     "met": ours_use[key] <= theirs[key]}
                )  # fmt: skip
        slower = sorted(
            n for n, row in report["results"].items() if row[debian] / row[base] < WORST_OVER_DEBIAN
        )
        found.append(
            {"what": f"no benchmark more than 10% slower than {debian}", "value": ", ".join(slower) or "none",
             "met": not slower}
        )  # fmt: skip
    if debian and report.get("libraries"):
        found += _library_targets(report["libraries"], base, debian)
    return found


def _library_targets(libraries: dict[str, dict[str, float]], base: str, debian: str) -> list[dict]:
    """The C-library table's targets: speed is Debian's time over ours per row."""
    speed = {n: row[debian] / row[base] for n, row in libraries.items() if debian in row and base in row}
    if not speed:
        return []
    behind = sorted(n for n, value in speed.items() if value < LIBRARY_OVER_DEBIAN)
    found = [
        {"what": f"every C-library row at least {LIBRARY_OVER_DEBIAN:.2f}x {debian}'s speed",
         "value": ", ".join(f"{n} {speed[n]:.2f}x" for n in behind) or "none", "met": not behind}
    ]  # fmt: skip
    if "zstd_decompress" in speed:
        value = speed["zstd_decompress"]
        found.append(
            {"what": f"zstd_decompress at least {ZSTD_DECOMPRESS_OVER_DEBIAN:.2f}x {debian}'s speed",
             "value": f"{value:.2f}x", "met": value >= ZSTD_DECOMPRESS_OVER_DEBIAN}
        )  # fmt: skip
    return found


def _commit() -> dict:
    """The pyfreight commit the results were measured with (and whether the work tree
    had changes), so results can be compared over time."""

    def git(*args: str) -> str:
        proc = subprocess.run(["git", "-C", str(REPO_ROOT), *args], capture_output=True, text=True)
        return proc.stdout.strip() if proc.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or "unknown", "dirty": bool(git("status", "--porcelain"))}


def _chosen_suite(suite: dict, suite_name: str, site: Path) -> dict[str, Benchmark]:
    """The benchmarks of `suite_name`: cpython/bench.yaml's pyperformance subset or
    pyperformance's whole default suite, then the C-library table (alone: "libraries")."""
    found: dict[str, Benchmark] = {}
    if suite_name == "full":
        specs, skipped = full_suite(site)
        say(f"bench: the full suite less {len(skipped)} that need PyPI packages: {', '.join(skipped)}")
        found.update((n, pyperformance_benchmark(spec)) for n, spec in specs.items())
    elif suite_name == "subset":
        found.update((n, pyperformance_benchmark(spec)) for n, spec in suite["benchmarks"].items())
    clash = sorted(set(found) & set(suite["libraries"]))
    if clash:
        raise PyfreightError(
            f"cpython/bench.yaml: {', '.join(clash)} name both a benchmark and a library row"
        )
    found.update((n, library_benchmark(n)) for n in suite["libraries"])
    return found


def run_bench(
    ws: Workspace,
    specs: list[BuildSpec],
    jobs: int,
    *,
    against_trees: list[str],
    suite_name: str = "subset",
    only: Sequence[str] = (),
    fast: bool = True,
) -> Path:
    # What the user named is checked before anything is fetched or built.
    given = [against(tree, i) for i, tree in enumerate(against_trees)]
    if given and specs and not runner_for(specs[0].target).bench.against:
        raise PyfreightError(
            f"--against gives Linux trees; a {specs[0].target.triple} build is measured beside ours only"
        )
    if not specs or len({(s.version, s.target.triple) for s in specs}) != 1:
        raise PyfreightError("bench compares builds of one CPython version for one target")
    suite = load_suite()
    site = ensure_tools(ws, suite)
    benchmarks = _chosen_suite(suite, suite_name, site)
    unknown = [n for n in only if n not in benchmarks]
    if unknown:
        known = ", ".join(benchmarks)
        raise PyfreightError(
            f"no benchmark named {', '.join(unknown)} in the {suite_name} suite; known: {known}"
        )
    chosen = {n: benchmarks[n] for n in (only or benchmarks)}
    minor, target = specs[0].minor, specs[0].target
    interpreters = ours(ws, specs, jobs) + given
    runner = runner_for(target)
    debian = images.ensure_debian_python_image(ws, minor) if runner.bench.debian else None
    if debian:
        image, version = debian
        interpreters.append(
            Interpreter(f"debian {version}", f"/usr/bin/python{minor}", None, this_machines_runner())
        )
    elif not runner.bench.debian:
        image = runner.runtime_image(ws)
        say(f"bench: {target.triple} {runner.bench.says}")
    else:
        image = runner.runtime_image(ws)
        say(f"bench: Debian serves no CPython {minor} (dockerfiles/images.yaml debian_python): ours only")
    labels = [i.label for i in interpreters]
    if len(set(labels)) != len(labels):
        raise PyfreightError(
            f"two columns share a name ({', '.join(labels)}); name --against trees as LABEL=PATH"
        )

    folder, stem = bench_names(minor, target)
    out_dir = ws.build / "bench" / folder
    out_dir.mkdir(parents=True, exist_ok=True)
    out_dir.chmod(0o777)  # written by the container's user (Wine's is the prefix's owner)
    log = ws.logs / f"bench-{stem}.log"
    log.write_text("")
    probed = {}
    if runner.bench.startup_probe:  # it reads Linux's process accounting (wait4, VmHWM)
        say(f"bench: describing {len(interpreters)} interpreters, start-up memory, {STARTUP_PROBE_RUNS} runs")
        probed = probe(image, interpreters, STARTUP_PROBE_RUNS, log)
    results: dict[str, dict[str, float]] = {}
    libraries: dict[str, dict[str, float]] = {}
    started = time.monotonic()
    for i, (name, spec) in enumerate(chosen.items(), 1):
        say(f"[{i:2}/{len(chosen)}] {name} ({time.monotonic() - started:.0f} s; log: {log})")
        for column, interp in enumerate(interpreters):
            try:
                result = _run_one(image, site, out_dir, interp, column, name, spec, fast, log)
            except PyfreightError as exc:
                raise PyfreightError(f"{exc}\n(last lines of {log}:\n{tail(log, 20)})") from None
            rows = results if spec.table == "interpreter" else libraries
            for bench_name, seconds in median_seconds(result).items():
                rows.setdefault(bench_name, {})[interp.label] = seconds

    def ratios(label: str, rows: dict[str, dict[str, float]], names: set[str] | None = None) -> float:
        # a benchmark some interpreter could not run is left out of every mean
        complete = {n: row for n, row in rows.items() if all(lab in row for lab in labels)}
        return geometric_mean(
            [row[label] / row[labels[0]] for n, row in complete.items() if names is None or n in names]
        )

    startup = set(suite["startup"])
    report = {
        "python": specs[0].version,
        "target": target.triple,
        "runner": runner.kind,
        "suite": suite_name,
        "pyfreight": _commit(),
        "interpreters": labels,
        "fast": fast,
        "results": results,
        "geomean": {lab: ratios(lab, results) for lab in labels},
        "startup": {lab: ratios(lab, results, startup) for lab in labels},
        "libraries": libraries,
        "libraries_geomean": {lab: ratios(lab, libraries) for lab in labels},
        "startup_names": sorted(startup),
        "probe": probed,
        "seconds": round(time.monotonic() - started),
    }
    report["targets"] = _targets(report)
    json_path = ws.build / "bench" / f"bench-{stem}.json"
    tmp = json_path.with_name(f"{owned(f'.{json_path.name}')}part")
    tmp.write_text(json.dumps(report, indent=2) + "\n")
    tmp.replace(json_path)
    table = render_table(report)
    json_path.with_suffix(".txt").write_text(table + "\n")
    print(table)
    return json_path
