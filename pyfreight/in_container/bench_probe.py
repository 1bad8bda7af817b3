"""Run by `pyfreight bench` inside the bench container with one of the interpreters
measured: describes every interpreter (its build flags, whether its executable is a
PIE) and measures what start-up costs besides time: page faults of `python -c pass`
and `python -S -c pass` (from wait4) and the peak RSS of the same start-up (VmHWM,
printed by the interpreter itself at the end of `-c`), interleaved across
interpreters, median of the runs. Prints one JSON document on stdout.

Usage: bench_probe.py RUNS LABEL=PYTHON [LABEL=PYTHON ...]"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

DESCRIBE = """
import json, os, sys, sysconfig
exe = os.path.realpath(sys.executable)
with open(exe, "rb") as fh:
    head = fh.read(18)
# e_type of the ELF header: 2 is a fixed-address executable, 3 a PIE (or shared object)
e_type = int.from_bytes(head[16:18], "little") if head[:4] == b"\\x7fELF" else None
names = ("CONFIG_ARGS", "CC", "CFLAGS", "LDFLAGS", "PY_CFLAGS_NODIST", "PY_LDFLAGS_NODIST")
print(json.dumps({
    "version": sys.version.split()[0],
    "executable": exe,
    "size_bytes": os.path.getsize(exe),
    "pie": {2: False, 3: True}.get(e_type),
    "config": {n: sysconfig.get_config_var(n) for n in names},
}))
"""

STARTUP_COMMANDS = {"python -c pass": [], "python -S -c pass": ["-S"]}


# Printed by the interpreter measured as its last act: the peak RSS of its own image.
# (wait4's ru_maxrss cannot be used: it keeps the spawning process's RSS from before exec.)
PEAK_RSS = "import sys; sys.stdout.write(open('/proc/self/status').read())"


def _faults(command: list[str]) -> tuple[int, int]:
    """Minor and major page faults of one run of `command`."""
    pid = os.posix_spawn(command[0], command, os.environ)
    _, status, usage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed with status {status}")
    return usage.ru_minflt, usage.ru_majflt


def _peak_rss_kib(python: str, flags: list[str]) -> int:
    status = subprocess.run(
        [python, *flags, "-c", PEAK_RSS], check=True, capture_output=True, text=True
    ).stdout
    line = next(line for line in status.splitlines() if line.startswith("VmHWM:"))
    return int(line.split()[1])


def main() -> int:
    runs = int(sys.argv[1])
    interpreters = dict(arg.split("=", 1) for arg in sys.argv[2:])
    report: dict = {}
    for label, python in interpreters.items():
        out = subprocess.run([python, "-c", DESCRIBE], check=True, capture_output=True, text=True)
        report[label] = {"facts": json.loads(out.stdout), "startup": {}}
    samples: dict = {(label, name): [] for label in interpreters for name in STARTUP_COMMANDS}
    for _ in range(runs):
        for name, flags in STARTUP_COMMANDS.items():
            for label, python in interpreters.items():
                minor, major = _faults([python, *flags, "-c", "pass"])
                samples[label, name].append((_peak_rss_kib(python, flags), minor, major))
    for (label, name), values in samples.items():
        rss, minflt, majflt = zip(*values, strict=True)
        report[label]["startup"][name] = {
            "peak_rss_kib": statistics.median(rss),
            "minor_faults": statistics.median(minflt),
            "major_faults": statistics.median(majflt),
        }
    print(json.dumps(report, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
