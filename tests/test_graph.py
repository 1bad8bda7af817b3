from __future__ import annotations

import pytest

from pyfreight.deps.graph import build_order, check_graph, closure
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
