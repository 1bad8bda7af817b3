"""Which benchmarks `pyfreight bench` runs, and the tools that run them: pyperf and
pyperformance from hash-pinned wheels (cpython/bench.yaml), unpacked into a folder that
goes on PYTHONPATH, so nothing is installed into the interpreters measured."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from pyfreight.datafiles import load_yaml
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import REPO_ROOT, Workspace

SUITE_FILE = REPO_ROOT / "cpython" / "bench.yaml"
BENCHMARKS_IN_WHEEL = "pyperformance/data-files/benchmarks"


def load_suite() -> dict[str, Any]:
    suite: dict[str, Any] = load_yaml(SUITE_FILE, "bench.schema.json")
    return suite


def ensure_tools(ws: Workspace, suite: dict) -> Path:
    """The unpacked wheels (fetched once per set of pins)."""
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


def full_suite(site: Path) -> tuple[dict[str, list[str]], list[str]]:
    """pyperformance's whole default suite as {name: [folder, args...]}, less the
    benchmarks that need packages from PyPI (the bench container has no network);
    those are returned as the second value, by name."""
    root = site / BENCHMARKS_IN_WHEEL
    chosen: dict[str, list[str]] = {}
    skipped = []
    in_table = False
    for line in (root / "MANIFEST").read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            in_table = line == "[benchmarks]"
            continue
        if not in_table or not line or line.startswith("#") or line.startswith("name\t"):
            continue
        name, metafile = line.split("\t")[:2]
        folder = "bm_" + (metafile.split(":", 1)[1].rstrip(">") if ":" in metafile else name)
        if (root / folder / "requirements.txt").exists():
            skipped.append(name)
            continue
        meta = root / folder / f"bm_{name}.toml"
        if not meta.exists():
            meta = root / folder / "pyproject.toml"
        extra = tomllib.loads(meta.read_text()).get("tool", {}).get("pyperformance", {}).get("extra_opts", [])
        chosen[name] = [folder, *extra]
    return chosen, skipped
