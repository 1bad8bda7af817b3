"""A build, named once: the CPython version, the build options and the target. The
command line resolves one from what a user typed and every step (build, archives,
verify, publish, bench) receives it whole; each spelling of a build (its folder in
build/, its make arguments, its archive names) is made from this object by
cpython/naming.py, and parsed back into one there alone."""

from __future__ import annotations

from dataclasses import dataclass

from pyfreight.cpython.options import BuildOptions, applies_bolt
from pyfreight.cpython.versions import CPythonSource, cpython_source
from pyfreight.errors import PyfreightError
from pyfreight.targets import Target, default_target, target


@dataclass(frozen=True)
class BuildSpec:
    version: str  # the full CPython version, e.g. "3.14.7"
    options: BuildOptions
    target: Target

    @classmethod
    def resolve(cls, python: str | None, options: str, target_name: str | Target | None) -> BuildSpec:
        """The build a user names: a pinned minor version (None: the default of
        cpython/versions.yaml), an option string and a target by triple or make name
        (None: the default target). Refuses, with the data's reason, an option the target
        cannot have."""
        if isinstance(target_name, Target):
            chosen = target_name
        else:
            chosen = target(target_name) if target_name else default_target()
        spec = cls(cpython_source(python).version, BuildOptions.parse(options), chosen)
        spec.check_target_has()
        return spec

    @classmethod
    def named(cls, version: str, options: str, triple: str) -> BuildSpec:
        """The build another spelling names (an archive's name, PYTHON.json): every part
        checked, none resolved against what is pinned."""
        return cls(version, BuildOptions.parse(options), target(triple))

    @property
    def bolt(self) -> bool:
        """llvm-bolt lays this build's interpreter out again (and its full archive carries
        the profile it used)."""
        return applies_bolt(self.options, self.target)

    @property
    def minor(self) -> str:
        return ".".join(self.version.split(".")[:2])

    def source(self) -> CPythonSource:
        """The pinned source of this build's version; a build of another patch release
        than the one pinned cannot be made here."""
        pinned = cpython_source(self.minor)
        if pinned.version != self.version:
            raise PyfreightError(
                f"CPython {self.version} is not pinned ({pinned.version} is, in cpython/versions.yaml): "
                "it cannot be built here"
            )
        return pinned

    def check_target_has(self) -> None:
        """Refuses a version or an option the target's data says it cannot have, with the
        data's reason."""
        options, triple = self.options, self.target.triple
        if self.minor in self.target.builds.unavailable_versions:
            why = " ".join(self.target.builds.unavailable_versions[self.minor].split())
            raise PyfreightError(f"{triple} is not built for CPython {self.minor}: {why}")
        features: tuple[tuple[str, bool], ...] = (
            ("pgo", options.pgo),
            ("lto", options.lto),
            ("debug", options.base == "debug"),
            ("freethreaded", options.freethreaded),
        )
        features += tuple((modifier, True) for modifier in options.modifiers)
        for feature, wanted in features:
            reason = self.target.builds.unavailable_options.get(feature)
            if wanted and reason:
                why = " ".join(reason.split())
                raise PyfreightError(f"{triple} cannot be built {options}: {why}")
        if options.static and not self.target.libc.static_linking:
            raise PyfreightError(
                f"{triple} cannot be built {options}: its C library ({self.target.libc.name}) is not linked "
                "statically (glibc's name service and iconv load shared libraries); "
                "static is for musl targets"
            )

    def __str__(self) -> str:
        return f"cpython {self.version} {self.options} for {self.target.triple}"
