"""How this machine runs a target's programs: one runner per way (runners/base.py), the
one chosen for a target here, from its data (targets/*.yaml `run`) and this machine."""

from __future__ import annotations

from pyfreight.runners.base import BenchSupport, BytecodeCompiler, Invocation, Runner, RunnerKind
from pyfreight.runners.container import EmulatedContainer, NativeContainer
from pyfreight.runners.host import HostRunner, runs_on_this_machine
from pyfreight.runners.unavailable import Unavailable
from pyfreight.runners.wine import WineRunner
from pyfreight.targets import Target

__all__ = ["BenchSupport", "BytecodeCompiler", "Invocation", "Runner", "RunnerKind", "runner_for"]

# targets/*.yaml `run` -> the runner of that way
_BY_DATA: dict[str, type[Runner]] = {
    "native": NativeContainer,
    "emulator": EmulatedContainer,
    "wine": WineRunner,
    "unavailable": Unavailable,
}


def runner_for(target: Target) -> Runner:
    """The runner of `target`'s programs on this machine: what its data says, except
    that a Mac of its CPU runs a macOS target's programs itself."""
    if runs_on_this_machine(target):
        return HostRunner(target)
    return _BY_DATA[target.run.kind](target)
