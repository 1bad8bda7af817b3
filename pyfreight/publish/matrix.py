"""The release's build matrix, from data alone: each target's `builds.release`
(targets/*.yaml) crossed with every pinned CPython version (cpython/versions.yaml), each
build as the make command a user types for it. The release workflow runs exactly these."""

from __future__ import annotations

from dataclasses import dataclass

from pyfreight.cpython.naming import make_arguments
from pyfreight.cpython.spec import BuildSpec
from pyfreight.cpython.versions import load_versions
from pyfreight.targets import all_targets


@dataclass(frozen=True)
class MatrixEntry:
    spec: BuildSpec

    @property
    def name(self) -> str:
        return f"{self.spec.minor} {self.spec.target.triple} {self.spec.options}"

    def as_json(self) -> dict[str, str]:
        """The workflow's matrix row: the make arguments it runs, and what they build."""
        return {
            "name": self.name,
            "target": self.spec.target.triple,
            "cpython": self.spec.minor,
            "options": str(self.spec.options),
            "make": " ".join(make_arguments(self.spec)),
        }


def release_matrix() -> list[MatrixEntry]:
    """Every build of a release, by target, version and option. An option a target's
    data refuses stops here, with the data's reason, not hours into a workflow. A target
    whose archives are not made yet (`builds.unfinished: archives`) has no builds, and a
    version the target is not built for (`builds.unavailable_versions`) none of that version."""
    _, versions = load_versions()
    return [
        MatrixEntry(BuildSpec.resolve(cpython, text, target))
        for target in sorted(all_targets().values(), key=lambda t: t.triple)
        if "archives" not in target.builds.unfinished
        for cpython in versions
        if cpython not in target.builds.unavailable_versions
        for text in target.builds.release
    ]
