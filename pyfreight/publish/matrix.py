"""The release's build matrix, from data alone: each target's `release_options`
(targets/*.yaml) crossed with every pinned CPython version (cpython/versions.yaml), each
build as the make command a user types for it. The release workflow runs exactly these."""

from __future__ import annotations

from dataclasses import dataclass

from pyfreight.cpython.build import check_target_has
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.versions import load_versions
from pyfreight.errors import PyfreightError
from pyfreight.targets import all_targets

# The Makefile's build targets, MAKE_NAME-SUFFIX, by the base option each builds.
MAKE_SUFFIX = {"pgo+lto": "pgo", "lto": "lto", "noopt": "noopt", "debug": "debug"}


@dataclass(frozen=True)
class MatrixEntry:
    target: str  # triple
    cpython: str  # minor version
    options: str  # build option string, as in the archive's name
    make: tuple[str, ...]  # the make arguments that build it

    @property
    def name(self) -> str:
        return f"{self.cpython} {self.target} {self.options}"


def make_arguments(make_name: str, cpython: str, options: BuildOptions) -> tuple[str, ...]:
    if options.base not in MAKE_SUFFIX:
        raise PyfreightError(
            f"build option {options} has no make target; release_options bases are {', '.join(MAKE_SUFFIX)}"
        )
    arguments = [f"{make_name}-{MAKE_SUFFIX[options.base]}", f"CPYTHON={cpython}"]
    if options.freethreaded:
        arguments.append("FREETHREADED=1")
    if options.modifiers:
        arguments.append("MODIFIERS=" + "+".join(options.modifiers))
    return tuple(arguments)


def release_matrix() -> list[MatrixEntry]:
    """Every build of a release, by target, version and option. An option a target's
    data refuses stops here, with the data's reason, not hours into a workflow."""
    _, versions = load_versions()
    entries = []
    for target in sorted(all_targets().values(), key=lambda t: t.triple):
        for cpython in versions:
            for text in target.release_options:
                options = BuildOptions.parse(text)
                check_target_has(options, target)
                make = make_arguments(target.make_name, cpython, options)
                entries.append(MatrixEntry(target.triple, cpython, str(options), make))
    return entries
