"""Every name a build has, made from its `BuildSpec` here and parsed back into one here
alone: its folder in build/, its make goal and arguments, its archives' file names
(python-build-standalone's scheme, which installers parse), its key in uv's downloads
index, and the folder of its benchmark results. tests/test_naming.py holds that no other
module formats or parses such a name."""

from __future__ import annotations

import re
from collections.abc import Sequence

from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.targets import Target

# The Makefile's build targets, MAKE_NAME-SUFFIX, by the base option each builds.
MAKE_SUFFIX = {"pgo+lto": "pgo", "lto": "lto", "noopt": "noopt", "debug": "debug"}
# The make variables a build goal reads (README), as make_arguments writes them.
MAKE_VARIABLES = ("CPYTHON", "FREETHREADED", "MODIFIERS")


def folder_stem(spec: BuildSpec) -> str:
    """The name of the build's tree, artifact, record and log in build/."""
    return f"cpython-{spec.version}-{spec.options}-{spec.target.triple}".replace("+", "_")


def make_arguments(spec: BuildSpec) -> tuple[str, ...]:
    """The make command line that builds `spec` (README's `make MAKE_NAME-SUFFIX …`)."""
    options = spec.options
    if options.base not in MAKE_SUFFIX:
        raise PyfreightError(f"build option {options} has no make target; bases are {', '.join(MAKE_SUFFIX)}")
    arguments = [f"{spec.target.make_name}-{MAKE_SUFFIX[options.base]}", f"CPYTHON={spec.minor}"]
    if options.freethreaded:
        arguments.append("FREETHREADED=1")
    if options.modifiers:
        arguments.append("MODIFIERS=" + "+".join(options.modifiers))
    return tuple(arguments)


def spec_of_make_arguments(arguments: Sequence[str]) -> BuildSpec:
    """The build a make command line names, parsed back (the inverse of make_arguments):
    the goal MAKE_NAME-SUFFIX, then VARIABLE=VALUE words. An empty value is unset and any
    other FREETHREADED value sets it, as make's $(if ...) reads them."""
    if not arguments:
        raise PyfreightError("--make needs a goal: MAKE_NAME-SUFFIX (targets/*.yaml make_name)")
    goal, *words = arguments
    make_name, _, suffix = goal.rpartition("-")
    base = {made: option for option, made in MAKE_SUFFIX.items()}.get(suffix)
    if not make_name or base is None:
        suffixes = ", ".join(MAKE_SUFFIX.values())
        raise PyfreightError(f"make goal {goal!r} is not MAKE_NAME-SUFFIX with a suffix of {suffixes}")
    values: dict[str, str] = {}
    for word in words:
        name, equals, value = word.partition("=")
        if not equals or name not in MAKE_VARIABLES:
            raise PyfreightError(
                f"{word!r} is not a make variable of a build; they are {', '.join(MAKE_VARIABLES)}"
            )
        values[name] = value
    options = "+".join(
        (["freethreaded"] if values.get("FREETHREADED") else [])
        + [base]
        + ([values["MODIFIERS"]] if values.get("MODIFIERS") else [])
    )
    return BuildSpec.resolve(values.get("CPYTHON") or None, options, make_name)


def archive_name(spec: BuildSpec, release: str, flavour: str, suffix: str, full: bool) -> str:
    """An archive's file name. A full archive (`full`: it describes itself) names every
    option; of the others, the default pgo+lto build has no option segment and its
    free-threaded twin says "freethreaded", as python-build-standalone names them."""
    named = f"cpython-{spec.version}+{release}-{spec.target.triple}"
    options = str(spec.options)
    if full:
        return f"{named}-{options}-{flavour}{suffix}"
    variant = {"pgo+lto": "", "freethreaded+pgo+lto": "freethreaded-"}.get(options, f"{options}-")
    return f"{named}-{variant}{flavour}{suffix}"


_FULL_NAME = re.compile(
    r"cpython-(?P<version>3\.\d+\.\d+[a-z0-9]*)\+(?P<release>[^-]+)-(?P<target>.+)-(?P<options>[a-z+]+)"
    r"-full\.tar\.zst"
)
FULL_NAME_PATTERN = "cpython-VERSION+RELEASE-TARGET-OPTIONS-full.tar.zst"


def parse_full_name(file_name: str) -> tuple[BuildSpec, str] | None:
    """The build and the release a full archive's file name names; None when it is not
    such a name. An unknown target or option raises a PyfreightError that names it."""
    match = _FULL_NAME.fullmatch(file_name)
    if match is None:
        return None
    return BuildSpec.named(match["version"], match["options"], match["target"]), match["release"]


def uv_key(spec: BuildSpec, variant: str) -> str:
    """The build's key in uv's downloads index: version, variant, and uv's platform."""
    return f"cpython-{spec.version}{'+' + variant if variant else ''}-{spec.target.uv_platform.key}"


def bench_names(minor: str, target: Target) -> tuple[str, str]:
    """The folder of a benchmark run's results, and the stem of its log and table (bench-STEM):
    the default target's keep the short names; another target's say which."""
    stem = minor if target.is_default else f"{minor}-{target.triple}"
    return f"cpython-{stem}", stem
