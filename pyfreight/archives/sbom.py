"""The distribution's software bill of materials: CycloneDX 1.6 JSON
(python/licenses/sbom.cdx.json), checked against the official CycloneDX schema
(shipped in cyclonedx-python-lib) every time it is written.

One component per bundled library and one for CPython itself, each with its version,
SPDX license expression, purl, and its source archive (upstream URL and sha256) as a
"source-distribution" reference; the dependency relations come from the recipes and
from which libraries CPython's modules link. The build image is named as the tool
that built everything, by its content-hash tag and the sha256 of the manifest of its
pinned packages (not the docker image id, nor the whole package list, which differ
between machines and days for the same tag), so the SBOM is as reproducible as the rest
of the archive."""

from __future__ import annotations

import datetime
import json
import uuid
from urllib.parse import quote

from pyfreight import __version__
from pyfreight.errors import PyfreightError
from pyfreight.hashing import text_sha256
from pyfreight.sources.recipes import Recipe, Source
from pyfreight.targets import Redistributable

SPEC_VERSION = "1.6"
# A fixed namespace: the serial number is a name-based UUID of the archive's name.
SERIAL_NAMESPACE = uuid.UUID("0b3b2a5e-6f1d-4c77-9a43-70c1b1d3e2f4")


def _source_reference(source: Source) -> dict:
    url = source.urls[0] if source.urls else f"file:{quote(source.file)}"
    return {
        "type": "source-distribution",
        "url": url,
        "hashes": [{"alg": "SHA-256", "content": source.sha256}],
    }


def _component(
    name: str, version: str, license_expression: str, purl: str, sources: tuple[Source, ...]
) -> dict:
    return {
        "type": "library",
        "bom-ref": name,
        "name": name,
        "version": version,
        "licenses": [{"expression": license_expression}],
        "purl": purl,
        "externalReferences": [_source_reference(s) for s in sources],
    }


def make_sbom(
    *,
    archive_name: str,
    cpython_version: str,
    cpython_source: Source,
    recipes: dict[str, Recipe],
    linked_by_cpython: set[str],
    image_tag: str,
    image_manifest: str,
    epoch: int,
    redistributed: Redistributable | None = None,
) -> dict:
    """The SBOM document for a distribution built from `recipes` (the dependency
    closure) of which CPython's modules link `linked_by_cpython` directly, with the
    vendor's files it ships as they are (`redistributed`: the VC runtime beside a
    Windows python.exe), which no module links and the distribution carries."""
    cpython = _component(
        "cpython",
        cpython_version,
        "Python-2.0 AND CNRI-Python",
        f"pkg:generic/cpython@{quote(cpython_version)}",
        (cpython_source,),
    )
    cpython["type"] = "application"
    components = [cpython]
    for name in sorted(recipes):
        r = recipes[name]
        components.append(
            _component(name, r.version, r.license, r.purl or f"pkg:generic/{name}@{r.version}", r.sources)
        )
    shipped = ["cpython"]
    if redistributed is not None:
        pypi = redistributed.wheel.pypi
        purl = (
            f"pkg:pypi/{pypi.project}@{quote(pypi.version)}" if pypi else f"pkg:generic/{redistributed.name}"
        )
        components.append(
            _component(
                redistributed.name, redistributed.version, redistributed.license, purl, (redistributed.wheel,)
            )
        )
        shipped.append(redistributed.name)
    dependencies = [{"ref": "cpython", "dependsOn": sorted(linked_by_cpython)}]
    dependencies += [{"ref": name, "dependsOn": sorted(recipes[name].depends)} for name in sorted(recipes)]
    manifest_sha = text_sha256(image_manifest)
    timestamp = datetime.datetime.fromtimestamp(epoch, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "bomFormat": "CycloneDX",
        "specVersion": SPEC_VERSION,
        "serialNumber": f"urn:uuid:{uuid.uuid5(SERIAL_NAMESPACE, archive_name)}",
        "version": 1,
        "metadata": {
            "timestamp": timestamp,
            "component": {"type": "application", "bom-ref": "distribution", "name": archive_name},
            "tools": {
                "components": [
                    {"type": "application", "name": "pyfreight", "version": __version__},
                    {
                        "type": "platform",
                        "name": image_tag.split(":")[0],
                        "version": image_tag.split(":")[1],
                        "description": "build image (pinned toolchain); hash: its pinned packages' manifest",
                        "hashes": [{"alg": "SHA-256", "content": manifest_sha}],
                    },
                ]
            },
        },
        "components": components,
        "dependencies": [{"ref": "distribution", "dependsOn": shipped}, *dependencies],
    }


def sbom_errors(document: dict) -> list[str]:
    """Violations of the official CycloneDX 1.6 JSON schema."""
    from cyclonedx.schema import SchemaVersion
    from cyclonedx.validation.json import JsonStrictValidator

    error = JsonStrictValidator(SchemaVersion.V1_6).validate_str(json.dumps(document))
    if error is None:
        return []
    detail = error.data  # jsonschema's error: say where and what, not the whole schema
    where = "/".join(str(p) for p in getattr(detail, "absolute_path", ())) or "(top level)"
    return [f"sbom.cdx.json {where}: {getattr(detail, 'message', str(error))}"]


def checked(document: dict) -> dict:
    problems = sbom_errors(document)
    if problems:
        raise PyfreightError("the SBOM does not match the CycloneDX 1.6 schema:\n  " + "\n  ".join(problems))
    return document
