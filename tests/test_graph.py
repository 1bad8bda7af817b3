from __future__ import annotations

import pytest

from pyfreight.deps.graph import build_order, check_graph, closure, for_os, longest_chains_first
from pyfreight.errors import PyfreightError
from pyfreight.sources.recipes import load_all
from tests.conftest import write_recipe


def recipes_from(tmp_path, edges):
    for name, deps in edges.items():
        write_recipe(tmp_path, name, depends=deps)
    return load_all(tmp_path)


def test_order_puts_dependencies_first_and_is_stable(tmp_path):
    recipes = recipes_from(tmp_path, {"app": ["b", "a"], "a": ["c"], "b": ["c"], "c": []})
    assert build_order(recipes, ["app"]) == ["c", "a", "b", "app"]
    assert closure(recipes, ["a"]) == {"a", "c"}


def test_the_costliest_chains_start_first_and_dependencies_stay_first(tmp_path):
    """A big leaf (OpenSSL's sources) and the head of a chain (X11 before Tk) are ranked
    before cheap leaves that come first by name; no recipe before one it depends on."""

    def recipe(name, size, depends=()):
        source = {"file": f"{name}-1.0.tar.gz", "sha256": "0" * 64, "size": size, "urls": []}
        write_recipe(tmp_path, name, depends=depends, sources=[source])

    recipe("aaa-small", 10)
    recipe("bzip", 20)
    recipe("openssl", 5000)
    recipe("xproto", 10)
    recipe("x11", 900, ["xproto"])
    recipe("tk", 900, ["x11"])
    recipes = load_all(tmp_path)
    order = build_order(recipes, list(recipes))
    assert order[:2] == ["aaa-small", "bzip"]  # by name, before the re-ranking
    ranked = longest_chains_first(recipes, order)
    assert ranked == ["openssl", "xproto", "x11", "tk", "bzip", "aaa-small"]
    # the real recipes: every dependency before its dependents, and OpenSSL first
    real = for_os(load_all(), "linux", None)
    ranked = longest_chains_first(real, build_order(real, list(real)))
    assert ranked[0] == "openssl"
    for at, name in enumerate(ranked):
        assert set(real[name].every_dependency()) <= set(ranked[:at]), name


def test_cycle_is_reported(tmp_path):
    recipes = recipes_from(tmp_path, {"a": ["b"], "b": ["c"], "c": ["a"]})
    with pytest.raises(PyfreightError, match="dependency cycle"):
        check_graph(recipes)


def test_unknown_dependency_is_named(tmp_path):
    recipes = recipes_from(tmp_path, {"a": ["nosuch"]})
    with pytest.raises(PyfreightError, match=r"a depends on unknown recipe.*nosuch"):
        check_graph(recipes)


def test_unknown_requested_name(tmp_path):
    recipes = recipes_from(tmp_path, {"a": []})
    with pytest.raises(PyfreightError, match="no recipe named 'zzz'"):
        build_order(recipes, ["zzz"])


def test_a_dependency_of_one_system_only_is_that_systems(tmp_path):
    """tk needs libx11 on Linux only (os_depends): Linux builds order libx11 first,
    Windows builds, where libx11 is not built, still build tk; the full graph knows both."""
    write_recipe(tmp_path, "tcl")
    write_recipe(tmp_path, "libx11", unavailable_on={"windows": "the X Window System is Unix's"})
    write_recipe(tmp_path, "tk", depends=["tcl"], os_depends={"linux": ["libx11"]})
    recipes = load_all(tmp_path)
    check_graph(recipes)
    linux, windows = for_os(recipes, "linux", None), for_os(recipes, "windows", None)
    assert linux["tk"].depends == ("tcl", "libx11") and build_order(linux, ["tk"]) == ["libx11", "tcl", "tk"]
    assert windows["tk"].depends == ("tcl",) and build_order(windows, ["tk"]) == ["tcl", "tk"]
    assert "libx11" not in windows and closure(recipes, ["tk"]) == {"tcl", "tk", "libx11"}


def test_an_unknown_dependency_of_one_system_is_named(tmp_path):
    write_recipe(tmp_path, "tk", os_depends={"linux": ["nosuch"]})
    with pytest.raises(PyfreightError, match=r"tk depends on unknown recipe.*nosuch"):
        check_graph(load_all(tmp_path))
