"""What a make goal builds, read the way the driver reads it: `make -n` prints the
pyfreight command, and the driver's own parser and resolution turn it into the build."""

from __future__ import annotations

import shlex
import subprocess

from pyfreight.cli import build_parser
from pyfreight.cli.common import named_spec
from pyfreight.cpython.spec import BuildSpec
from tests.conftest import REPO


def build_of_make(*words: str) -> BuildSpec:
    """The build `make WORDS` runs (make itself reads the Makefile; nothing is built)."""
    dry = subprocess.run(["make", "-n", *words], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0, dry.stderr
    (command,) = [line for line in dry.stdout.splitlines() if "bin/pyfreight build " in line]
    return named_spec(build_parser().parse_args(shlex.split(command)[1:]))
