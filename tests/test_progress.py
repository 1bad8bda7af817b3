"""Progress of long container runs: the CPython build's phases read from its log, and
the follower that shows them while the log grows."""

from __future__ import annotations

import threading
import time

from pyfreight.container.run import _watching
from pyfreight.cpython.progress import CPythonPhases

# Lines as a pgo build writes them (configure, CPython's Makefile, regrtest, make install).
PGO_LOG = """\
checking build system type... x86_64-pc-linux-gnu
configure: creating Makefile
Running code to generate profile data (this can take a while):
Building with support for profile generation:
clang-22 -c -fprofile-instr-generate Objects/object.c
0:00:01 load avg: 1.00 [ 1/44] test_array
0:00:02 load avg: 1.00 [ 2/44] test_base64
Rebuilding with profile guided optimizations:
Creating directory /install/bin
Rebuilding with profile guided optimizations:
"""


def test_phases_of_a_pgo_build():
    phases = CPythonPhases()
    shown = [label for line in PGO_LOG.splitlines() if (label := phases(line))]
    assert shown == [
        "configure",
        "compile",
        "PGO: instrumented build",
        "PGO: instrumented build",
        "PGO: training on CPython's test suite, test 1 of 44",
        "PGO: training on CPython's test suite, test 2 of 44",
        "PGO: optimized rebuild",
        "install",
    ]


def test_test_counts_only_while_training():
    phases = CPythonPhases()
    assert phases("0:00:01 load avg: 1.00 [ 1/44] test_array") is None  # e.g. make test later


def test_follower_shows_phases_as_the_log_grows(tmp_path, capsys):
    log = tmp_path / "build.log"
    log.write_text("old line from an earlier run: checking build system type\n")

    def write() -> None:
        with log.open("a") as fh:
            for line in PGO_LOG.splitlines()[:4]:
                fh.write(line + "\n")
                fh.flush()
                time.sleep(0.2)

    with _watching(log, CPythonPhases()):
        writer = threading.Thread(target=write)
        writer.start()
        writer.join()
        time.sleep(1.5)
    err = capsys.readouterr().err
    assert err.count("configure") == 1  # the earlier run's line is not read again
    assert "compile" in err and err.count("PGO: instrumented build") == 1
