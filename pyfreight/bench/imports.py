"""`pyfreight bench-import`: importing the whole stdlib from memory vs from the filesystem.

One generated script has an `import` line per importable stdlib module of the archive.
It runs in (a) the archive's own python3 with its stdlib on the filesystem (page cache
warm) and (b) the in-memory importer binary linked from the same archive; so does bare
start-up (`-c pass`). Runs are interleaved, (a) and (b) alternating, and the table shows
medians of wall time per process. A benchmark command, not a test: it prints a table and
saves JSON; targets are reported, never asserted."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from pyfreight.cpython.spec import BuildSpec
from pyfreight.embed.memory import static_code_refusal
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits, extract
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.python_json import Distribution, checked_document

# Speed goals: the memory binary's time as a fraction of the filesystem importer's.
GOALS = {"stdlib import": 0.60, "start-up": 0.85}
# GC policies, each measured on both interpreters alike, so that the table separates what
# the importer wins from what the policy wins (code put before and after the imports):
# no cyclic collection while the modules' bodies run; every object the imports made moved
# to the permanent generation, which the collection at interpreter exit skips; or both.
GC_POLICIES = {
    "GC deferred": ("import gc\ngc.disable()\n", "gc.enable()\n"),
    "GC frozen": ("", "import gc\ngc.freeze()\n"),
    "GC deferred+frozen": ("import gc\ngc.disable()\n", "gc.freeze()\ngc.enable()\n"),
}
# Bare start-up with what start-up made frozen: the exit collection's share of start-up.
STARTUP_GC_FROZEN = "import gc; gc.freeze()"

# Run by the archive's python3: the stdlib modules that import there, one per line.
# Left out: tests, IDLE and turtledemo (applications), __main__ modules, and the two
# modules whose import acts (antigravity opens a browser, this prints the Zen).
LIST_MODULES = r"""
import importlib, sys, sysconfig
from pathlib import Path
stdlib = Path(sysconfig.get_paths()["stdlib"])
skip_top = {"test", "idlelib", "turtledemo", "site-packages", "__phello__", "antigravity", "this"}
names = set()
for path in sorted(stdlib.rglob("*.py")):
    parts = path.relative_to(stdlib).with_suffix("").parts
    if parts[0] in skip_top or "tests" in parts or parts[-1] == "__main__" or "-" in "".join(parts):
        continue
    if len(parts) > 1 and not (stdlib.joinpath(*parts[:-1]) / "__init__.py").is_file():
        continue  # a folder that is not a package (e.g. config-3.X-…)
    names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
ok = []
for name in sorted(names):
    try:
        importlib.import_module(name)
        ok.append(name)
    except Exception:
        pass
print("\n".join(ok))
"""

# Run by the in-memory binary: where its import time goes, measured in-process.
BREAKDOWN = r"""
import marshal, sys, time
names = sys.argv[1:]
finder = next(f for f in sys.meta_path if type(f).__module__ == "_pyfreight_finder")
t0 = time.perf_counter()
specs = [finder.find_spec(n, None) for n in names]
t1 = time.perf_counter()
codes = [s.loader.get_code(s.name) for s in specs if s is not None and s.loader is not None]
t2 = time.perf_counter()
print(f"{t1 - t0} {t2 - t1} {len(codes)}")
"""


@dataclass
class Measurement:
    label: str
    command: list[str]
    seconds: list[float]

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)


def _time_once(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    result = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    elapsed = time.perf_counter() - started
    if result.returncode != 0:
        raise PyfreightError(
            f"{command[0]} failed (exit {result.returncode}):\n{result.stderr.decode()[-2000:]}"
        )
    return elapsed


def measure(
    commands: dict[str, list[str]], runs: int, env: dict[str, str], step: str = "bench-import"
) -> dict[str, Measurement]:
    """Each command `runs` times, interleaved round by round, after one warm-up each."""
    for command in commands.values():
        _time_once(command, env)
    results = {label: Measurement(label, command, []) for label, command in commands.items()}
    for round_no in range(runs):
        say(f"{step}: round {round_no + 1}/{runs}")
        for label, command in commands.items():
            results[label].seconds.append(_time_once(command, env))
    return results


def _importtime_total(binary: Path, script: str, env: dict[str, str]) -> float:
    """Total import time from -X importtime (seconds): the sum of every module's self
    time, which is also the sum of the top-level cumulative times."""
    result = subprocess.run(
        [str(binary), "-I", "-X", "importtime", "-c", script], capture_output=True, text=True, env=env
    )
    total = 0.0
    for line in result.stderr.splitlines():
        if line.startswith("import time:") and "self [us]" not in line:
            total += int(line.split("|")[0].split(":")[1]) / 1e6
    return total


def breakdown(memory: Path, names: list[str], script: str, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [str(memory), "-I", "-c", BREAKDOWN, *names], capture_output=True, text=True, env=env, check=True
    ).stdout.split()
    find_spec, get_code = float(out[0]), float(out[1])
    total = _importtime_total(memory, script, env)
    return {
        "all imports (-X importtime total)": total,
        "  find_spec, every module": find_spec,
        "  get_code (lookup + unmarshal)": get_code,
        "  the rest: module bodies, GC, loader": max(total - find_spec - get_code, 0.0),
    }


def stripped_size(executable: Path, scratch: Path) -> int:
    """The size `executable` would have stripped of symbols and debug sections (a stripped
    copy is written, measured and removed)."""
    scratch.mkdir(parents=True, exist_ok=True)
    copy = scratch / f".{executable.name}.stripped"
    try:
        subprocess.run(["strip", "--strip-all", "-o", str(copy), str(executable)], check=True)
        return copy.stat().st_size
    finally:
        copy.unlink(missing_ok=True)


def render(results: dict[str, Measurement], count: int, parts: dict[str, float]) -> tuple[str, dict]:
    rows, ratios = [], {}
    for what, fs, mem in (
        ("stdlib import", "filesystem import", "memory import"),
        ("start-up", "filesystem -c pass", "memory -c pass"),
    ):
        a, b = results[fs].median, results[mem].median
        ratios[what] = b / a
        rows.append(
            f"{what:34} {a * 1e3:12.1f} ms {b * 1e3:12.1f} ms {b / a:10.2f}   target <= {GOALS[what]}"
        )
    policies = [(f"import, {p}", f"filesystem import, {p}", f"memory import, {p}") for p in GC_POLICIES]
    policies.append(("start-up, GC frozen", "filesystem -c pass, GC frozen", "memory -c pass, GC frozen"))
    static = [
        ("import, static code", "filesystem import", "memory static-code import"),
        ("start-up, static code", "filesystem -c pass", "memory static-code -c pass"),
        *(
            (f"import, static, {p}", f"filesystem import, {p}", f"memory static-code import, {p}")
            for p in GC_POLICIES
        ),
    ]
    for what, fs, mem in (
        *policies,
        *static,
        *(
            (f"{what}, {kind}", fs, f"memory {kind} {run}")
            for kind in ("PIE", "non-PIE")
            for what, fs, run in (
                ("import", "filesystem import", "import"),
                ("start-up", "filesystem -c pass", "-c pass"),
            )
        ),
    ):
        if mem in results:
            a, b = results[fs].median, results[mem].median
            ratios[what] = b / a
            rows.append(f"{what:34} {a * 1e3:12.1f} ms {b * 1e3:12.1f} ms {b / a:10.2f}   (information)")
    head = f"{'':34} {'filesystem (a)':>15} {'memory (b)':>15} {'b/a':>10}"
    lines = [f"{count} modules, median of {len(results['memory import'].seconds)} interleaved runs", head]
    lines += ["-" * len(head), *rows, "", "where the memory binary's import time goes (one run each):"]
    lines += [f"  {k:38} {v * 1e3:8.1f} ms" for k, v in parts.items()]
    plain = results["filesystem import"].median
    startup = results["filesystem -c pass"].median
    lines.append(
        "start-up, GC frozen: the policy alone (filesystem with it / plain) "
        f"{results['filesystem -c pass, GC frozen'].median / startup:.2f}; importer and policy "
        f"(memory with it / filesystem plain) {results['memory -c pass, GC frozen'].median / startup:.2f}"
    )
    for policy in GC_POLICIES:
        if f"memory import, {policy}" in results:
            alone = results[f"filesystem import, {policy}"].median / plain
            both = results[f"memory import, {policy}"].median / plain
            lines.append(
                f"{policy}: the policy alone (filesystem with it / plain) {alone:.2f}; "
                f"importer and policy (memory with it / filesystem plain) {both:.2f}"
            )
            ratios[f"memory with {policy} / filesystem plain"] = both
        if f"memory static-code import, {policy}" in results:
            both = results[f"memory static-code import, {policy}"].median / plain
            lines.append(f"{policy}: static code and policy (memory with both / filesystem plain) {both:.2f}")
            ratios[f"memory static code with {policy} / filesystem plain"] = both
    for what, limit in GOALS.items():
        verdict = "met" if ratios[what] <= limit else "NOT MET"
        lines.append(f"target: {what} b/a <= {limit}: {verdict} ({ratios[what]:.2f})")
    return "\n".join(lines), ratios


def ensure_archive(ws: Workspace, spec: BuildSpec, jobs: int) -> Path:
    """The full archive of that build in dist/, building and writing it when missing."""
    from pyfreight.pipeline.distribute import distribute

    return distribute(spec, ws, jobs, check=False)[1].full


def ensure_memory_binary(
    ws: Workspace,
    archive: Path,
    cc: str | None,
    pie: bool | None = None,
    limits: Limits = DEFAULT_LIMITS,
    static_code: bool = False,
) -> Path:
    """The in-memory importer binary of `archive`, linked again only when the archive
    changed (a stamp records its size and mtime). By default linked as the archive's
    python3 is (PIE or not); the other way round shows what relocations cost at start-up.
    With `static_code`, its code objects are laid out in its data (embed --static-code)."""
    from pyfreight.embed.command import embed
    from pyfreight.embed.memory import PackOptions

    folder = ws.build / "bench-import" / archive.name.removesuffix(".tar.zst")
    folder.mkdir(parents=True, exist_ok=True)
    name = {None: "python-memory", True: "python-memory-pie", False: "python-memory-nopie"}[pie]
    name += "-static" if static_code else ""
    binary, stamp = folder / name, folder / f"{name}.stamp"
    wanted = f"{archive.stat().st_size} {archive.stat().st_mtime_ns} {cc}"
    if not (binary.is_file() and stamp.is_file() and stamp.read_text() == wanted):
        stamp.unlink(missing_ok=True)
        memory = PackOptions(static_code=static_code)
        embed(archive, binary, selection="all", cc=cc, memory=memory, pie=pie, limits=limits)
        stamp.write_text(wanted)
    return binary


def run_bench_import(
    ws: Workspace,
    archive: Path,
    memory_binary: Path,
    runs: int,
    pie_both: bool = False,
    cc: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> Path:
    """Measures `memory_binary` (linked from `archive` as its python3 is) against the
    archive's python3; with `pie_both`, a memory binary linked the other way (PIE or
    not) is measured beside them for information (no target)."""
    unpacked = ws.build / "bench-import" / archive.name.removesuffix(".tar.zst") / "unpacked"
    if not unpacked.is_dir():
        say(f"bench-import: extracting {archive.name}")
        extract(archive, unpacked, limits)
    document = checked_document(unpacked / "python", archive)
    python = unpacked / "python" / document["python_exe"]
    env = {"PATH": "/usr/bin:/bin", "LC_ALL": "C.UTF-8"}
    listing = subprocess.run([str(python), "-I", "-c", LIST_MODULES], capture_output=True, text=True, env=env)
    names = listing.stdout.split()
    if listing.returncode != 0 or not names:
        raise PyfreightError(f"{python} could not list its stdlib modules:\n{listing.stderr[-2000:]}")
    script = "".join(f"import {name}\n" for name in names)
    commands = {
        "filesystem import": [str(python), "-I", "-c", script],
        "memory import": [str(memory_binary), "-I", "-c", script],
        "filesystem -c pass": [str(python), "-c", "pass"],
        "memory -c pass": [str(memory_binary), "-c", "pass"],
        "filesystem -c pass, GC frozen": [str(python), "-c", STARTUP_GC_FROZEN],
        "memory -c pass, GC frozen": [str(memory_binary), "-c", STARTUP_GC_FROZEN],
    }
    for policy, (before, after) in GC_POLICIES.items():
        with_policy = before + script + after
        commands[f"filesystem import, {policy}"] = [str(python), "-I", "-c", with_policy]
        commands[f"memory import, {policy}"] = [str(memory_binary), "-I", "-c", with_policy]
    build = Distribution(unpacked / "python", document).build
    if static_code_refusal(build) is None:
        static_binary = ensure_memory_binary(ws, archive, cc, limits=limits, static_code=True)
        commands["memory static-code import"] = [str(static_binary), "-I", "-c", script]
        commands["memory static-code -c pass"] = [str(static_binary), "-c", "pass"]
        for policy, (before, after) in GC_POLICIES.items():
            with_policy = before + script + after
            commands[f"memory static-code import, {policy}"] = [str(static_binary), "-I", "-c", with_policy]
    if pie_both:
        pie = not build.options.codegen.pie
        other_binary = ensure_memory_binary(ws, archive, cc, pie=pie, limits=limits)
        other = "PIE" if pie else "non-PIE"
        commands[f"memory {other} import"] = [str(other_binary), "-I", "-c", script]
        commands[f"memory {other} -c pass"] = [str(other_binary), "-c", "pass"]
    results = measure(commands, runs, env)
    parts = breakdown(memory_binary, names, script, env)
    table, ratios = render(results, len(names), parts)
    sizes = {label: Path(m.command[0]).stat().st_size for label, m in results.items()}
    executables = sorted({m.command[0] for m in results.values()})
    stripped = {e: stripped_size(Path(e), ws.build / "bench") for e in executables}
    table += "\n\nexecutables (as measured / stripped):\n" + "\n".join(
        f"  {e}: {Path(e).stat().st_size / 1e6:.1f} MB / {stripped[e] / 1e6:.1f} MB" for e in executables
    )
    print(table)
    out = ws.build / "bench" / f"bench-import-{document['python_major_minor_version']}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "archive": archive.name,
        "modules": len(names),
        "runs": runs,
        "machine": {"cpus": os.cpu_count(), "uname": os.uname().release},
        "seconds": {label: m.seconds for label, m in results.items()},
        "medians": {label: m.median for label, m in results.items()},
        "ratios": ratios,
        "targets": GOALS,
        "breakdown_seconds": parts,
        "executables": {label: m.command[0] for label, m in results.items()},
        "executable_bytes": sizes,
        "stripped_executable_bytes": stripped,
    }
    out.write_text(json.dumps(report, indent=2) + "\n")
    (out.with_suffix(".txt")).write_text(table + "\n")
    say(f"bench-import: saved {out}")
    return out
