"""Runs CPython's regression tests (`python -m test`, same arguments) under Wine, with
answers of the test harness adapted to what Wine does, so the tests themselves run
unchanged. Each adaptation gives the answer a real Windows machine can give too:

- regrtest's load tracker reads the performance counters (HKEY_PERFORMANCE_DATA) to
  print the system load. Wine answers "invalid handle" (8.0, and the pinned 10.0 again),
  which regrtest only expects as PermissionError (an account without access), and it
  stops before any test. It is left off, as regrtest does when hunting reference leaks.
- test.support.os_helper.can_symlink() makes a symbolic link and removes it. Wine's
  CreateSymbolicLinkW reports success and makes nothing (8.0 and 10.0), so the removal
  fails and test_os could not even be imported. It answers False, as for a Windows account
  without the symbolic-link privilege: the tests needing links are skipped.
- A worker that runs past its timeout is killed, and regrtest then removes the worker's
  temporary folder. Under Wine the processes that worker started (a process pool's)
  live on and hold that folder, and the sharing violation stopped the whole run
  ("WORKER BUG"). The folder is left instead, with a line saying so: the timed-out test
  file still fails, and the run goes on, as it does when a killed worker's folder can
  be removed.

A worker regrtest starts itself runs as `-m test.libregrtest.worker`, and runpy has
then imported importlib.util, which test_build_details uses having imported only
importlib; a worker started through this script imports it too.

With -j, regrtest's worker processes start through this script too (`--worker JSON`),
so the adaptations hold where the tests run."""

import importlib.util  # noqa: F401  (below)
import os
import sys

from test.libregrtest import logger, main, run_workers, runtests, worker
from test.support import os_helper

SCRIPT = os.path.abspath(__file__)  # workers start in other folders


def adapt_to_wine() -> None:
    logger.Logger.start_load_tracker = lambda self: None
    os_helper._can_symlink = False  # the answer can_symlink() caches and returns


class _OsHelperLeavingHeldFolders:
    """test.support.os_helper for regrtest's main process, whose rmtree leaves a folder
    that a killed worker's children still hold."""

    def __getattr__(self, name: str) -> object:
        return getattr(os_helper, name)

    @staticmethod
    def rmtree(path: str) -> None:
        try:
            os_helper.rmtree(path)
        except PermissionError as exc:
            print(f"regrtest_wine: left {path}: {exc}", file=sys.stderr, flush=True)


# This script is regrtest's __main__, whose names test_rlcompleter completes: its own
# begin with "_" so that none answers a prefix the test asks for ("st").
def _start_workers_through_this_script() -> None:
    """A worker's command line is the interpreter's, then `-m test.libregrtest.worker
    JSON`; this puts `SCRIPT --worker` before the rest, which it then ignores."""
    interpreter = runtests.RunTests.create_python_cmd
    runtests.WorkerRunTests.create_python_cmd = lambda self: [*interpreter(self), SCRIPT, "--worker"]


# Guarded: multiprocessing's children on Windows import the parent's main script again
# (as __mp_main__), and must not start regrtest themselves.
if __name__ == "__main__":
    adapt_to_wine()
    if sys.argv[1:2] == ["--worker"]:
        sys.argv = [sys.argv[0], sys.argv[-1]]  # what worker.main() reads: the JSON
        worker.main()
    else:
        _start_workers_through_this_script()
        run_workers.os_helper = _OsHelperLeavingHeldFolders()
        main.main()
