"""A cache key changes when any input of a build changes, and only then."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pyfreight import toolchain
from pyfreight.container.build_image import BuildImage
from pyfreight.deps.recipe_build import recipe_key
from pyfreight.platforms import platform_of
from pyfreight.sources.recipes import load_recipe
from pyfreight.targets import default_target
from tests.conftest import write_recipe

IMAGE = BuildImage(tag="pyfreight-build:test", image_id="sha256:" + "1" * 64, manifest=Path("/dev/null"))
TARGET = default_target()


@pytest.fixture
def recipe(tmp_path):
    return load_recipe(write_recipe(tmp_path, "lib", build="./configure\nmake\n"))


def key(recipe, image=IMAGE, target=TARGET, deps=None):
    return recipe_key(recipe, image, target, deps if deps is not None else {"zlib": "a" * 64})


def test_same_inputs_same_key(recipe, tmp_path):
    # Loading the recipe again (new objects, same files) gives the same key.
    again = load_recipe(recipe.directory)
    assert key(recipe) == key(again)


def test_build_script_change(recipe):
    before = key(recipe)
    recipe.build_script.write_text("./configure --disable-shared\nmake\n")
    assert key(recipe) != before


def test_added_patch_changes_key(recipe):
    before = key(recipe)
    (recipe.directory / "fix.patch").write_text("--- a\n+++ b\n")
    assert key(recipe) != before


def test_source_hash_change(recipe):
    changed_source = dataclasses.replace(recipe.sources[0], sha256="f" * 64)
    changed = dataclasses.replace(recipe, sources=(changed_source,))
    assert key(changed) != key(recipe)


def test_image_change(recipe):
    other = dataclasses.replace(IMAGE, image_id="sha256:" + "2" * 64)
    assert key(recipe, image=other) != key(recipe)


def test_image_tag_alone_does_not_matter(recipe):
    # The image id is what identifies the toolchain, not the name we gave it.
    renamed = dataclasses.replace(IMAGE, tag="pyfreight-build:renamed")
    assert key(recipe, image=renamed) == key(recipe)


def test_dependency_key_change(recipe):
    assert key(recipe, deps={"zlib": "b" * 64}) != key(recipe)
    assert key(recipe, deps={}) != key(recipe)


def test_compiler_settings_change(recipe, monkeypatch):
    before = key(recipe)
    platform = platform_of(TARGET)
    monkeypatch.setattr(type(platform), "hardening_cflags", platform.hardening_cflags + " -O3")
    assert key(recipe) != before


def test_job_count_does_not_change_key(recipe):
    # Parallelism must not decide the bytes, so it is not part of the key.
    env1 = toolchain.build_environment(TARGET, jobs=1, source_date_epoch=1)
    env8 = toolchain.build_environment(TARGET, jobs=8, source_date_epoch=1)
    assert {k: v for k, v in env1.items() if k != "JOBS"} == {k: v for k, v in env8.items() if k != "JOBS"}
    assert "JOBS" not in toolchain.keyed_settings(TARGET)
