"""Which phase a CPython build is in, read from its log as the build writes it, so the
console says more than "building" for the 5 to 25 minutes a build takes."""

from __future__ import annotations

import re

# (a line that starts a phase, the phase). The PGO lines are the messages of CPython's
# own Makefile: profile-run-stamp says "Running code…" and then makes profile-gen-stamp
# ("Building with support…"), so both start the instrumented build; the training is
# told by regrtest's first progress line. The others are the first line configure and
# make install print.
_PHASES = (
    ("checking build system type", "configure"),
    ("configure: creating Makefile", "compile"),
    ("Running code to generate profile data", "PGO: instrumented build"),
    ("Building with support for profile generation", "PGO: instrumented build"),
    ("Rebuilding with profile guided optimizations", "PGO: optimized rebuild"),
    ("Creating directory /install/bin", "install"),
)
TRAINING = "PGO: training on CPython's test suite"
# regrtest's progress: "0:01:02 load avg: 1.93 [12/44] test_array"
_TEST_PROGRESS = re.compile(r"\[\s*(\d+)/(\d+)\]")


class CPythonPhases:
    """Called with each log line; returns the phase to show when it changed (and the
    training's test count now and then), else None. Phases only move forward: make
    install runs the PGO targets again, which only say so."""

    _ORDER = (
        "configure",
        "compile",
        "PGO: instrumented build",
        TRAINING,
        "PGO: optimized rebuild",
        "install",
    )

    def __init__(self) -> None:
        self.phase = ""

    def _advance(self, phase: str) -> str | None:
        if self.phase and self._ORDER.index(phase) < self._ORDER.index(self.phase):
            return None
        self.phase = phase
        return phase

    def __call__(self, line: str) -> str | None:
        for marker, phase in _PHASES:
            if marker in line:
                return self._advance(phase)
        in_pgo = self.phase in ("PGO: instrumented build", TRAINING)
        if in_pgo and (match := _TEST_PROGRESS.search(line)):
            self.phase = TRAINING
            return f"{TRAINING}, test {match.group(1)} of {match.group(2)}"
        return None
