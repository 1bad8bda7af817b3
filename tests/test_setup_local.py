"""The Setup.local generator, against the real Setup files of every pinned CPython."""

from __future__ import annotations

import pytest

from pyfreight.cpython.setup_local import (
    ExtensionData,
    load_extension_data,
    parse_setup,
    render_setup_local,
    required_recipes,
)
from pyfreight.cpython.versions import load_versions
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import read_member
from pyfreight.paths import default_workspace
from pyfreight.sources.fetch import fetch_source

_, VERSIONS = load_versions()
DATA = load_extension_data()


@pytest.fixture(scope="module", params=sorted(VERSIONS))
def upstream(request):
    """(origin, text) of Modules/Setup.stdlib.in of a pinned CPython source."""
    src = VERSIONS[request.param]
    tarball = fetch_source(src.source, default_workspace().downloads, log=lambda m: None)
    origin = f"{src.top_dir}/Modules/Setup.stdlib.in"
    return origin, read_member(tarball, origin).decode()


def test_every_upstream_module_is_accounted_for(upstream):
    origin, text = upstream
    modules = parse_setup(text)
    assert len(modules) > 60
    setup_local = render_setup_local(modules, DATA, origin)
    static, rest = setup_local.split("*shared*")
    shared, disabled = rest.split("*disabled*")
    built = {line.split()[0] for line in static.splitlines()[2:] if line.strip()}
    tests_only = {line.split()[0] for line in shared.splitlines() if line.strip()}
    left_out = {line.split()[0] for line in disabled.splitlines() if line.strip()}
    assert built | tests_only | left_out == {m.name for m in modules}
    assert not built & left_out and not built & tests_only and not tests_only & left_out
    # the modules CPython's test suite needs are built, as shared modules
    assert {"_testcapi", "_testinternalcapi", "_testmultiphase", "_ctypes_test"} <= tests_only
    # the modules the product promises
    for name in (
        "_ssl",
        "_hashlib",
        "_sqlite3",
        "_lzma",
        "_bz2",
        "zlib",
        "_ctypes",
        "_curses",
        "_curses_panel",
        "readline",
        "_uuid",
        "pyexpat",
        "_elementtree",
        "_decimal",
        "_tkinter",
    ):
        assert name in built, name
    assert "_gdbm" in left_out


def test_a_static_interpreter_builds_no_shared_module(upstream):
    """A static interpreter cannot load shared modules: the test-only ones are left
    out (disabled), and the product's modules are built in exactly as otherwise."""
    origin, text = upstream
    modules = parse_setup(text)
    dynamic = render_setup_local(modules, DATA, origin)
    static = render_setup_local(modules, DATA, origin, static_interpreter=True)
    assert dynamic.split("*shared*")[0] == static.split("*shared*")[0]
    shared, disabled = static.split("*shared*")[1].split("*disabled*")
    assert not [line for line in shared.splitlines() if line.strip()]
    left_out = {line.split()[0] for line in disabled.splitlines() if line.strip()}
    assert {"_testcapi", "_testinternalcapi", "_ctypes_test", "xxlimited"} <= left_out


def test_sources_come_from_upstream(upstream):
    origin, text = upstream
    modules = {m.name: m for m in parse_setup(text)}
    assert "_ctypes/_ctypes.c" in modules["_ctypes"].sources
    assert modules["_ssl"].sources == ("_ssl.c",)
    line = next(
        line
        for line in render_setup_local(list(modules.values()), DATA, origin).splitlines()
        if line.startswith("_ssl ")
    )
    assert line == "_ssl _ssl.c -lssl -lcrypto"


def test_linked_libraries_come_from_recipes(upstream):
    _, text = upstream
    recipes = required_recipes(parse_setup(text), DATA)
    assert {"openssl", "sqlite", "tk", "ncurses", "libedit", "libffi"} <= set(recipes)


def test_unaccounted_module_stops_the_build():
    modules = parse_setup(
        "*@MODULE_BUILDTYPE@*\n@MODULE_NEW_TRUE@_brandnew _brandnew.c\narray arraymodule.c\n"
    )
    data = ExtensionData(plain=frozenset({"array"}))
    with pytest.raises(PyfreightError, match="_brandnew"):
        render_setup_local(modules, data, "Setup.stdlib.in")


def test_parse_handles_conditions_substitutions_and_sections():
    text = (
        "# comment\n*static*\nVAR=1\n"
        "@MODULE__CTYPES_TRUE@_ctypes _ctypes/a.c _ctypes/b.c @MODULE__CTYPES_MALLOC_CLOSURE@\n"
        "*shared*\nmath mathmodule.c -lm  # trailing comment\n"
    )
    modules = parse_setup(text)
    assert [(m.name, m.words) for m in modules] == [
        ("_ctypes", ("_ctypes/a.c", "_ctypes/b.c")),
        ("math", ("mathmodule.c", "-lm")),
    ]
    assert modules[1].sources == ("mathmodule.c",)


def test_upstream_flags_are_kept():
    line = "@MODULE__SHA3_TRUE@_sha3 sha3module.c -I$(srcdir)/Modules/_hacl/include _hacl/x.c -D_BSD_SOURCE\n"
    rendered = render_setup_local(parse_setup(line), ExtensionData(plain=frozenset({"_sha3"})), "S")
    assert "_sha3 sha3module.c -I$(srcdir)/Modules/_hacl/include _hacl/x.c -D_BSD_SOURCE\n" in rendered
