"""A build named once (cpython/spec.py): resolved from what a user types, spelled as a
folder, archive names and make arguments, and read back from an archive's name."""

from __future__ import annotations

import pytest

from pyfreight.archives.flavours import FLAVOURS, FULL
from pyfreight.cpython.naming import folder_stem, make_arguments, parse_full_name
from pyfreight.cpython.spec import BuildSpec
from pyfreight.cpython.versions import load_versions
from pyfreight.errors import PyfreightError
from pyfreight.targets import all_targets, default_target


def test_the_defaults_are_the_datas():
    default_minor, versions = load_versions()
    spec = BuildSpec.resolve(None, "noopt", None)
    assert spec.version == versions[default_minor].version and spec.minor == default_minor
    assert spec.target == default_target()
    assert spec == BuildSpec.resolve(default_minor, "noopt", default_target().make_name)


def test_spellings():
    spec = BuildSpec.resolve("3.13", "freethreaded+pgo+lto", "x86_64-unknown-linux-gnu")
    version = spec.version
    assert folder_stem(spec) == f"cpython-{version}-freethreaded_pgo_lto-x86_64-unknown-linux-gnu"
    assert make_arguments(spec) == ("linux-x86_64-pgo", "CPYTHON=3.13", "FREETHREADED=1")
    assert FULL.file_name(spec, "20990101") == (
        f"cpython-{version}+20990101-x86_64-unknown-linux-gnu-freethreaded+pgo+lto-full.tar.zst"
    )
    names = {f.name: f.file_name(spec, "20990101") for f in FLAVOURS}
    assert names["install_only"].endswith("-x86_64-unknown-linux-gnu-freethreaded-install_only.tar.gz")
    assert make_arguments(BuildSpec.resolve("3.14", "pgo+lto+pie", None))[-1] == "MODIFIERS=pie"
    # one spec in a set or as a key: specs of one target are equal and hash alike
    assert len({spec, BuildSpec.resolve("3.13", "freethreaded+pgo+lto", "linux-x86_64")}) == 1


@pytest.mark.parametrize(
    "target", sorted(t for t, f in all_targets().items() if "archives" not in f.builds.unfinished), ids=str
)
def test_every_full_archive_name_parses_back_into_its_spec(target):
    for text in all_targets()[target].builds.release:
        spec = BuildSpec.resolve(None, text, target)
        assert parse_full_name(FULL.file_name(spec, "20990101")) == (spec, "20990101")


def test_what_a_target_cannot_have_is_refused_with_the_datas_reason():
    foreign = next(t for t in all_targets().values() if "pgo" in t.builds.unavailable_options)
    with pytest.raises(PyfreightError, match=f"{foreign.triple} cannot be built pgo\\+lto: "):
        BuildSpec.resolve(None, "pgo+lto", foreign.triple)
    with pytest.raises(PyfreightError, match="static is for musl targets"):
        BuildSpec.resolve(None, "lto+static", default_target().triple)
    with pytest.raises(PyfreightError, match="unknown target 'sparc'"):
        BuildSpec.resolve(None, "noopt", "sparc")
    with pytest.raises(PyfreightError, match=r"no pinned CPython 3\.99"):
        BuildSpec.resolve("3.99", "noopt", None)


def test_a_version_that_is_not_pinned_is_not_built():
    spec = BuildSpec.named("3.14.1", "noopt", default_target().triple)
    with pytest.raises(PyfreightError, match=r"CPython 3\.14\.1 is not pinned"):
        spec.source()
