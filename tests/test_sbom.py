"""The SBOM against the official CycloneDX 1.6 schema, built from the real recipes."""

from __future__ import annotations

import pytest

from pyfreight.archives.sbom import checked, make_sbom, sbom_errors
from pyfreight.cpython.versions import cpython_source
from pyfreight.errors import PyfreightError
from pyfreight.sources.recipes import load_all


def _sbom(**overrides) -> dict:
    recipes = load_all()
    src = cpython_source("3.14")
    args = dict(
        archive_name="cpython-3.14.7+20261012-x86_64-unknown-linux-gnu-noopt-full.tar.zst",
        cpython_version=src.version,
        cpython_source=src.source,
        recipes=recipes,
        linked_by_cpython={"openssl", "zlib"},
        image_tag="pyfreight-build:0123456789abcdef",
        image_manifest="clang-19=1:19.1.7-3~deb12u1\n",
        epoch=1760000000,
    )
    return make_sbom(**(args | overrides))


def test_valid_cyclonedx_with_every_recipe():
    doc = _sbom()
    assert sbom_errors(doc) == []
    names = {c["name"] for c in doc["components"]}
    assert names == {"cpython", *load_all()}
    openssl = next(c for c in doc["components"] if c["name"] == "openssl")
    recipe = load_all()["openssl"]
    assert openssl["version"] == recipe.version
    assert openssl["externalReferences"][0]["hashes"][0]["content"] == recipe.sources[0].sha256
    tk = next(d for d in doc["dependencies"] if d["ref"] == "tk")
    assert "tcl" in tk["dependsOn"]


def test_same_inputs_same_document():
    assert _sbom() == _sbom()
    assert _sbom()["serialNumber"] != _sbom(archive_name="other.tar.zst")["serialNumber"]


def test_schema_violations_are_reported_with_their_place():
    doc = _sbom()
    doc["components"][1]["type"] = "no-such-type"
    problems = sbom_errors(doc)
    assert problems and "components/1/type" in problems[0]
    with pytest.raises(PyfreightError, match=r"CycloneDX 1\.6"):
        checked(doc)


def test_the_vendors_files_a_windows_tree_ships_are_a_component_of_the_distribution():
    """The VC runtime beside python.exe: linked by no module, carried by the archive,
    named with its wheel (purl and sha256) and Microsoft's terms."""
    from pyfreight.targets import all_targets

    vendor = all_targets()["x86_64-pc-windows-gnullvm"].redistributable
    doc = _sbom(redistributed=vendor)
    assert sbom_errors(doc) == []
    runtime = next(c for c in doc["components"] if c["name"] == "msvc-runtime")
    assert runtime["purl"] == "pkg:pypi/msvc-runtime@14.44.35112"
    assert runtime["licenses"] == [{"expression": "LicenseRef-Microsoft-Visual-Cpp-Redistributable"}]
    assert runtime["externalReferences"][0]["hashes"][0]["content"] == vendor.wheel.sha256
    distribution = next(d for d in doc["dependencies"] if d["ref"] == "distribution")
    assert distribution["dependsOn"] == ["cpython", "msvc-runtime"]
    assert "msvc-runtime" not in next(d for d in doc["dependencies"] if d["ref"] == "cpython")["dependsOn"]
