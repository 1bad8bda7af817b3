from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from pyfreight.leftovers import remove_tree
from pyfreight.paths import default_workspace
from pyfreight.sources.recipes import Source
from tests import tiers


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pyfreight tiers (tests/tiers.py)")
    group.addoption(
        "--tier",
        choices=("ci", "all"),
        default="all",
        help="ci: what `make test` runs (no test of a part); all: every test (`make test-all`)",
    )
    group.addoption("--part", default=None, help="only the tests of one part of test-all (`make test-part`)")
    group.addoption(
        "--show-parts", action="store_true", help="with --collect-only: each test's part ('-': none)"
    )


def pytest_configure(config: pytest.Config) -> None:
    # The tests run make as a user types it. Started by `make test ARGS=…`, pytest inherits
    # make's command-line variables (MAKEFLAGS), which every make a test runs would take
    # as its own: ARGS=--durations=60 reached `pyfreight build`.
    for variable in ("MAKEFLAGS", "MFLAGS", "MAKEOVERRIDES", "MAKELEVEL"):
        os.environ.pop(variable, None)
    config.addinivalue_line(
        "markers", "part(name): a test of test-all only, in its part NAME (tests/tiers.py)"
    )
    config.addinivalue_line(
        "markers",
        "archive_reader: a container test that only reads the noopt build's archives and "
        "runs containers of its own; scheduled beside the engine's other tests (conftest.py)",
    )
    config.pluginmanager.register(_WhatTheSelectionNeeds(), "pyfreight-what-the-selection-needs")


WORK_TREE_BEFORE = pytest.StashKey[set[str] | None]()
MISSING = pytest.StashKey[str]()  # what this machine lacks, as an xdist worker found it


# pytest removes old sessions' temporary folders with shutil.rmtree, which recurses and
# breaks (RecursionError at exit, failing the whole run) on the 1100-folder trees the
# hostile-input tests write. Later pytest sessions (tests/test_tiers.py starts some) make
# this session's folder "old" at once, so whatever a test left that deep goes here first.
TOO_DEEP_FOR_PYTEST = 200


def _deep_branches(root: Path) -> list[Path]:
    """The folders exactly TOO_DEEP_FOR_PYTEST below `root`, found without recursion."""
    found: list[Path] = []
    stack = [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        if depth == TOO_DEEP_FOR_PYTEST:
            found.append(folder)
            continue
        try:
            with os.scandir(folder) as entries:
                stack += [(Path(e.path), depth + 1) for e in entries if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
    return found


def _work_tree_changes() -> set[str] | None:
    """`git status --porcelain` of the repository, line by line (None: not a git
    checkout, e.g. an unpacked source archive)."""
    try:
        out = subprocess.run(
            ["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=all"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return None
    return set(out.stdout.splitlines()) if out.returncode == 0 else None


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[WORK_TREE_BEFORE] = _work_tree_changes()


def pytest_sessionfinish(session: pytest.Session) -> None:
    if missing := session.config.stash.get(MISSING, None):
        # What a worker found missing (pytest_testnodedown), said as a run without
        # workers says it: one line, the usage error's exit status.
        print(f"ERROR: {missing}", file=sys.stderr)
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    # No test writes into the repository's work tree (issue 57: an a.o in its root):
    # whatever a run changed there that was not changed before fails the run, named.
    before = session.config.stash.get(WORK_TREE_BEFORE, None)
    after = _work_tree_changes()
    if before is not None and after is not None and (new := sorted(after - before)):
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"error: the tests changed the repository's work tree: {'; '.join(new[:10])}", red=True
            )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    factory = getattr(session.config, "_tmp_path_factory", None)
    if factory is None or getattr(factory, "_basetemp", None) is None:
        return
    for branch in _deep_branches(factory.getbasetemp()):
        remove_tree(branch)


def _part_of(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("part")
    return str(marker.args[0]) if marker else None


# Under pytest-xdist's --dist loadgroup (make's test tiers run two workers), the tests that
# use the Docker engine form two groups, each run by one worker in order:
# - "engine": the first of them makes the noopt build; the others share the build folder
#   it fills (they rebuild in it, hold its records, time its waits), so none may race
#   another;
# - "engine-readers": the tests marked archive_reader, which only read the noopt build's
#   archives (the workers share that build: the fixture's lock) and run containers of
#   their own. They run beside the engine group once the build is made, on the worker
#   that first ran the module groups (every other test, grouped by module) while the
#   other built.
# The order of the work queue is the order below (make passes --no-loadscope-reorder):
# the build first, the readers last, so that no worker waits for the build while
# module tests are left.
ENGINE_GROUP = "engine"
READERS_GROUP = "engine-readers"


def _group_of(item: pytest.Item) -> str:
    if not item.get_closest_marker("container"):
        return item.path.name
    return READERS_GROUP if item.get_closest_marker("archive_reader") else ENGINE_GROUP


def _queue_rank(group: str) -> int:
    return {ENGINE_GROUP: 0, READERS_GROUP: 2}.get(group, 1)


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    groups = {item: _group_of(item) for item in items}
    for item, group in groups.items():
        item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: _queue_rank(groups[item]))  # stable: modules stay in order
    known = tiers.parts()
    named = {_part_of(item) for item in items} - {None}
    if named - set(known):
        raise pytest.UsageError(
            f"tests are marked with unknown parts {sorted(named - set(known))}; known: {known}"
        )
    part = config.getoption("--part")
    if part is not None and part not in known:
        raise pytest.UsageError(f"--part {part}: no such part; the parts are {', '.join(known)}")
    if part is not None:
        keep = [item for item in items if _part_of(item) == part]
    elif config.getoption("--tier") == "ci":
        keep = [item for item in items if _part_of(item) is None]
    else:
        keep = list(items)
    dropped = [item for item in items if item not in keep]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep
    if config.getoption("--collect-only") and config.getoption("--show-parts"):
        for item in keep:
            config.get_terminal_writer().line(f"{_part_of(item) or '-'} {item.nodeid}")


class _WhatTheSelectionNeeds:
    """Stops the run before its first test when this machine lacks what the selected
    tests need. Last among the collection hooks: after pytest's own -m and -k, so
    `make test-unit` (-m "not container") needs no Docker engine."""

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if config.getoption("--collect-only"):
            return
        missing = tiers.missing_for(
            container=any(item.get_closest_marker("container") for item in items),
            part_names={name for item in items if (name := _part_of(item))},
        )
        if not missing:
            return
        message = "the selected tests need what this machine lacks, so none was run: " + "; ".join(missing)
        worker_output = getattr(config, "workeroutput", None)
        if worker_output is None:
            raise pytest.UsageError(message)
        # An xdist worker: a UsageError here would crash it with a traceback. It runs
        # nothing and hands the line to the controller, which says it once.
        worker_output["missing"] = message
        config.hook.pytest_deselected(items=list(items))
        items[:] = []


@pytest.hookimpl(optionalhook=True)  # pytest-xdist's, called in the controller
def pytest_testnodedown(node: Any, error: object) -> None:
    message = getattr(node, "workeroutput", {}).get("missing")
    if message:
        node.config.stash[MISSING] = message


def make_source(tmp_path: Path, name: str = "demo-1.0.tar", data: bytes = b"x" * 5000) -> Source:
    """A real file and the pin that matches it."""
    (tmp_path / "origin").mkdir(exist_ok=True)
    (tmp_path / "origin" / name).write_bytes(data)
    return Source(file=name, sha256=hashlib.sha256(data).hexdigest(), size=len(data), urls=(), debian=None)


def write_recipe(root: Path, name: str, depends=(), build: str = "true\n", **overrides) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    data = {
        "name": name,
        "version": "1.0",
        "license": "MIT",
        "license_files": [f"{name}-1.0/LICENSE"],
        "depends": list(depends),
        "sources": [{"file": f"{name}-1.0.tar.gz", "sha256": "0" * 64, "size": 1, "urls": []}],
    }
    data.update(overrides)
    (folder / "recipe.yaml").write_text(yaml.safe_dump(data))
    (folder / "build.sh").write_text(textwrap.dedent(build))
    return folder


def _shared_by_workers(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder every worker of this session sees: pytest-xdist gives each
    worker its own folder beneath the session's."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if "PYTEST_XDIST_WORKER" in os.environ else base


@pytest.fixture(scope="session")
def noopt_dists(tmp_path_factory):
    """The archives of a real CPython noopt build (default target) of a pinned minor
    version, built once per test session and version (the build is the expensive part),
    as a function of the version. The workers share it: the first to ask builds, under a
    lock; another asking meanwhile waits and reads what the first recorded, failure
    included (one build's log tail, not a second build)."""
    from pyfreight.archives.flavours import FULL, INSTALL_ONLY, INSTALL_ONLY_STRIPPED
    from pyfreight.archives.write import WrittenArchives
    from pyfreight.cpython.naming import parse_full_name
    from pyfreight.cpython.spec import BuildSpec
    from pyfreight.formats.tarball import read_member
    from pyfreight.records import exclusive

    built: dict[str, WrittenArchives] = {}

    def archives(spec: BuildSpec, full: Path, release: str) -> WrittenArchives:
        twins = (full.with_name(f.file_name(spec, release)) for f in (INSTALL_ONLY, INSTALL_ONLY_STRIPPED))
        return WrittenArchives(full, *twins, json.loads(read_member(full, "python/PYTHON.json")))

    def build(spec: BuildSpec, minor: str, dist: Path) -> dict[str, str]:
        """Built as people build it: the README's make command (check-install is
        tests/test_cpython_integration.py's), into a folder of the session's own."""
        dist.mkdir()
        try:
            made = run_group(
                [
                    "make",
                    "-C",
                    str(REPO),
                    f"{spec.target.make_name}-noopt",
                    f"CPYTHON={minor}",
                    "ARGS=--no-check",
                ],
                timeout=5400,
                env={**os.environ, "PYFREIGHT_DIST_DIR": str(dist)},
            )
        except subprocess.TimeoutExpired:
            return {"failed": f"make {spec.target.make_name}-noopt ran past its 5400 s"}
        if made.returncode != 0:
            return {"failed": made.stdout[-3000:] + made.stderr[-3000:]}
        [full] = [p for p in dist.iterdir() if p.name.endswith(FULL.suffix)]
        return {"full": str(full)}

    def noopt_dist_of(minor: str) -> WrittenArchives:
        if minor in built:
            return built[minor]
        spec = BuildSpec.resolve(minor, "noopt", None)
        # For iterating on the tests that only read archives: reuse full archives already
        # written (separated by the path separator), found by the build they name.
        for path in os.environ.get("PYFREIGHT_TEST_NOOPT_FULL_ARCHIVE", "").split(os.pathsep):
            full = Path(path).resolve() if path else None
            if full is None or not full.name.endswith(FULL.suffix):
                continue
            release = full.name.removeprefix(f"cpython-{spec.version}+").split("-")[0]
            if full.name == FULL.file_name(spec, release):
                built[minor] = archives(spec, full, release)
                return built[minor]
        record = _shared_by_workers(tmp_path_factory) / f"noopt-{minor}.json"
        with exclusive(record, f"the session's noopt build of {minor}"):
            if not record.exists():
                outcome = build(spec, minor, record.with_name(f"dist-{minor}"))
                written = record.with_name(f".{record.name}.new")
                written.write_text(json.dumps(outcome))
                written.replace(record)
            outcome = json.loads(record.read_text())
        assert "failed" not in outcome, outcome["failed"]
        full = Path(outcome["full"])
        named = parse_full_name(full.name)
        assert named is not None and named[0] == spec, full.name
        built[minor] = archives(spec, full, named[1])
        return built[minor]

    return noopt_dist_of


@pytest.fixture(scope="session")
def noopt_dist(noopt_dists):
    """The archives of a real CPython 3.14 noopt build, shared by the distribution and
    embed tests."""
    return noopt_dists("3.14")


def linked_build_folder(dest: Path, keep: Callable[[str], bool] = lambda _name: True) -> Path:
    """A build folder at `dest` holding the default workspace's downloads, images and
    finished builds (those whose names `keep` accepts) as hard links: cheap, and nothing
    a run there writes (records, logs, replaced files) reaches the original, so a test
    may break a build there or kill a run in it."""
    source = default_workspace().build
    dest.mkdir(parents=True)
    for entry in source.iterdir():
        if entry.name in ("logs", "tmp") or entry.name.endswith(".dist.json") or not keep(entry.name):
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, symlinks=True, copy_function=os.link)
        else:
            os.link(entry, dest / entry.name)
    return dest


@pytest.fixture
def source_factory(tmp_path):
    return lambda **kw: make_source(tmp_path, **kw)


PYFREIGHT = Path(sys.executable).with_name("pyfreight")  # the console script of this venv
REPO = Path(__file__).resolve().parent.parent


def run_group(args: Sequence[str], *, timeout: float, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """subprocess.run with output captured as text, in a process group of its own that a
    timeout ends whole: make and the pyfreight it started (and their docker clients), not
    make alone. A killed pyfreight's containers are its watchdog's to end."""
    kwargs.setdefault("text", True)
    with subprocess.Popen(
        args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True, **kwargs
    ) as proc:
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
    return subprocess.CompletedProcess(list(args), proc.returncode, out, err)


def pyfreight_cli(
    *args: object, timeout: int = 3600, errors: str = "strict", **env: str
) -> subprocess.CompletedProcess[str]:
    """Runs the installed `pyfreight` console script as a user types it; output captured.
    `env` adds environment variables (e.g. PYFREIGHT_DIST_DIR=...). `errors`: how bytes
    that are not UTF-8 are decoded (what a Windows program prints in its code page)."""
    return run_group(
        [str(PYFREIGHT), *map(str, args)], timeout=timeout, errors=errors, env={**os.environ, **env}, cwd=REPO
    )
