"""Reading a build's module table: Setup rules as makesetup applies them, and the
inittab of config.c, against the real files of every pinned CPython."""

from __future__ import annotations

import pytest

from pyfreight.cpython.buildinfo import _expand, inittab, setup_rules
from pyfreight.cpython.setup_local import load_extension_data, parse_setup, render_setup_local
from pyfreight.cpython.versions import load_versions
from pyfreight.formats.tarball import read_member
from pyfreight.paths import default_workspace
from pyfreight.sources.fetch import fetch_source

_, VERSIONS = load_versions()


@pytest.fixture(scope="module", params=sorted(VERSIONS))
def source(request):
    src = VERSIONS[request.param]
    tarball = fetch_source(src.source, default_workspace().downloads, log=lambda m: None)
    return lambda name: read_member(tarball, f"{src.top_dir}/{name}").decode()


def test_config_c_in_fixed_entries(source):
    table = inittab(source("Modules/config.c.in"))
    assert table["builtins"] == "NULL" and table["sys"] == "NULL"
    assert table["marshal"] == "PyMarshal_Init"
    assert table["_warnings"] == "_PyWarnings_Init"
    assert "gc" in table and "_imp" in table


def test_every_generated_module_has_objects(source):
    origin = "Modules/Setup.stdlib.in"
    setup_local = render_setup_local(parse_setup(source(origin)), load_extension_data(), origin)
    bootstrap = source("Modules/Setup.bootstrap.in").replace("@MODULE_PWD_TRUE@", "")
    rules = setup_rules([setup_local, bootstrap])
    assert rules["_io"][0][0] == "Modules/_io/_iomodule.o"
    assert "Modules/_io/textio.o" in rules["_io"][0]
    assert rules["posix"][0] == ("Modules/posixmodule.o",)
    assert rules["_ssl"] == (("Modules/_ssl.o",), ("-lssl", "-lcrypto"))
    assert rules["_bisect"][1] is None  # no flags of its own: makesetup uses MODULE__BISECT_LDFLAGS
    assert "_gdbm" not in rules and "_testcapi" not in rules  # *disabled* and *shared*
    assert all(objs for objs, _ in rules.values())


def test_first_rule_wins_and_disabled_stays_out():
    rules = setup_rules(["*disabled*\n_dbm\n", "*static*\n_dbm _dbmmodule.c -lgdbm\nzlib zlibmodule.c -lz\n"])
    assert rules == {"zlib": (("Modules/zlibmodule.o",), ("-lz",))}


def test_shared_modules_are_not_part_of_the_interpreter():
    rules = setup_rules(["*shared*\n_testcapi _testcapimodule.c\n*static*\nzlib zlibmodule.c -lz\n"])
    assert rules == {"zlib": (("Modules/zlibmodule.o",), ("-lz",))}
    with pytest.raises(Exception, match=r"\*weird\*"):
        setup_rules(["*weird*\nzlib zlibmodule.c -lz\n"])


def test_make_variables_expand_to_link_words():
    make_vars = {"MODULE__MD5_LDFLAGS": "Modules/_hacl/libHacl_Hash_MD5.a", "X_LDFLAGS": "-L/x -lx -lm"}
    assert _expand(("$(MODULE__MD5_LDFLAGS)",), make_vars) == ("Modules/_hacl/libHacl_Hash_MD5.a",)
    assert _expand(("$(X_LDFLAGS)", "-lm"), make_vars) == ("-lx", "-lm")
