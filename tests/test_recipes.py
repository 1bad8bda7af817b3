"""The repository's recipes, and how a broken recipe is reported."""

from __future__ import annotations

import re

import pytest

from pyfreight.deps.graph import build_order, check_graph
from pyfreight.errors import PyfreightError
from pyfreight.sources.recipes import load_all, load_recipe
from tests.conftest import write_recipe

RECIPES = load_all()


def test_there_are_recipes():
    assert {"zlib", "xz", "openssl"} <= set(RECIPES)


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_recipe_is_pinned_and_licensed(name):
    recipe = RECIPES[name]
    assert recipe.sources
    for source in recipe.sources:
        assert re.fullmatch(r"[0-9a-f]{64}", source.sha256)
        assert source.size > 0
        assert source.urls or source.debian, f"{source.file}: nowhere to fetch it from"
    assert recipe.license.strip()
    assert recipe.license_files
    assert recipe.build_script.read_text().strip()


@pytest.mark.parametrize("name", sorted(RECIPES))
def test_build_script_stays_short(name):
    # A recipe's steps must be readable in one screen.
    assert len(RECIPES[name].build_script.read_text().splitlines()) <= 60


def test_real_graph_is_sound():
    check_graph(RECIPES)
    order = build_order(RECIPES, RECIPES)
    assert sorted(order) == sorted(RECIPES)
    for recipe in RECIPES.values():
        for dep in recipe.depends:
            assert order.index(dep) < order.index(recipe.name)


def test_schema_error_names_the_field(tmp_path):
    folder = write_recipe(
        tmp_path, "broken", sources=[{"file": "a.tar", "sha256": "xyz", "size": 1, "urls": []}]
    )
    with pytest.raises(PyfreightError) as err:
        load_recipe(folder)
    assert "sources/0/sha256" in str(err.value)
    assert "does not match" in str(err.value)


def test_missing_field_is_named(tmp_path):
    folder = write_recipe(tmp_path, "nolicense")
    text = (folder / "recipe.yaml").read_text().replace("license: MIT\n", "")
    (folder / "recipe.yaml").write_text(text)
    with pytest.raises(PyfreightError, match="'license' is a required property"):
        load_recipe(folder)


def test_name_must_match_folder(tmp_path):
    folder = write_recipe(tmp_path, "alpha")
    text = (folder / "recipe.yaml").read_text().replace("name: alpha", "name: beta")
    (folder / "recipe.yaml").write_text(text)
    with pytest.raises(PyfreightError, match="folder is 'alpha'"):
        load_recipe(folder)


def test_a_recipe_may_ask_for_its_upstreams_level_and_no_frame_pointers(tmp_path):
    """recipe.yaml's `optimization` and `frame_pointers` replace the toolchain's CFLAGS
    for that recipe's build alone, and change its cache key; a recipe that asks for
    neither builds with the toolchain's own flags, in the environment of every job."""
    from pyfreight.deps.recipe_build import recipe_job
    from pyfreight.targets import default_target
    from pyfreight.toolchain import common_cflags

    target = default_target()
    plain = load_recipe(write_recipe(tmp_path, "plain"))
    fast = load_recipe(write_recipe(tmp_path, "fast", optimization="-O3", frame_pointers=False))
    assert recipe_job(plain, {}, target).env == {}
    flags = recipe_job(fast, {}, target).env["CFLAGS"].split()
    assert "-O3" in flags and "-O2" not in flags
    assert "-fno-omit-frame-pointer" in common_cflags(target).split()
    assert not any("frame-pointer" in f for f in flags)
    assert recipe_job(fast, {}, target).env["CXXFLAGS"] == " ".join(flags)
    bad = write_recipe(tmp_path, "bad", optimization="-Ofast")
    with pytest.raises(PyfreightError, match="optimization"):
        load_recipe(bad)
