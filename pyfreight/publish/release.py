"""`pyfreight release`: a release folder assembled from the archives of one or more
builds, as people download them (from a GitHub release, or a folder).

For every full archive given (or found in dist/), its two install_only archives are
expected beside it under the names dist gives them. Every archive must pass
`pyfreight validate`. The folder gets the archives, SHA256SUMS, a downloads index in
the format uv reads (--python-downloads-json-url), release.json (what is in the
release, for programs) and RELEASE_NOTES.md (made from the archives' SBOMs). The same
archives give the same bytes: nothing records a time or a host."""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from urllib.parse import quote

from pyfreight.archives.flavours import (
    FLAVOURS,
    FULL,
    INSTALL_ONLY,
    INSTALL_ONLY_STRIPPED,
    PYTHON_JSON,
    Flavour,
)
from pyfreight.cpython.naming import FULL_NAME_PATTERN, parse_full_name, uv_key
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.spec import BuildSpec
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import read_member
from pyfreight.hashing import file_sha256
from pyfreight.logs import say
from pyfreight.verify.validate import validate

SBOM = "python/licenses/sbom.cdx.json"
# The build uv is pointed at for each variant: the fastest present, as uv wants one
# download per version, platform and variant. Builds with code-generation modifiers
# (+static, +pie, …) are in the release but not in the index.
PREFERENCE = ("pgo+lto", "lto", "pgo", "noopt")


@dataclass(frozen=True)
class Build:
    """One build's three archives and what its full archive says of itself."""

    spec: BuildSpec
    release: str
    archives: dict[str, Path]  # flavour name -> file
    document: dict  # PYTHON.json
    sbom: dict


def _files_of(full: Path) -> tuple[tuple[BuildSpec, str], dict[str, Path]]:
    """The build and release a full archive's name names, and the build's three archives
    by flavour name; nothing is read from them yet."""
    parsed = parse_full_name(full.name)
    if parsed is None:
        raise PyfreightError(f"{full.name}: not a full archive name ({FULL_NAME_PATTERN})")
    archives = {}
    for flavour in FLAVOURS:
        path = full.with_name(flavour.file_name(*parsed))
        if not path.is_file():
            raise PyfreightError(
                f"{path.name} is missing beside {full.name}: run `pyfreight dist` for that build"
            )
        archives[flavour.name] = path
    return parsed, archives


def _build_of(parsed: tuple[BuildSpec, str], archives: dict[str, Path]) -> Build:
    """What a validated build's full archive says of itself."""
    full = archives[FULL.name]
    try:
        document = json.loads(read_member(full, PYTHON_JSON))
        sbom = json.loads(read_member(full, SBOM))
    except (KeyError, ValueError) as exc:
        raise PyfreightError(f"{full.name}: no readable {exc} (run `pyfreight validate` on it)") from exc
    return Build(*parsed, archives, document, sbom)


def _uv_variant(options: BuildOptions) -> tuple[str, int] | None:
    """uv's variant for a build's options ("" for the default) and its preference rank;
    None for a build uv is not pointed at."""
    if str(options) == "debug":
        return "debug", 0
    variant = "freethreaded" if options.freethreaded else ""
    base = str(replace(options, freethreaded=False))
    return (variant, PREFERENCE.index(base)) if base in PREFERENCE else None


def _uv_entries(builds: list[Build], url_of: dict[str, str], sha_of: dict[str, str]) -> dict[str, dict]:
    """The downloads index uv reads: per version, platform and variant, the preferred
    build's install_only_stripped archive (default variant) or install_only archive."""
    chosen: dict[str, tuple[int, Build, Flavour, str]] = {}
    for build in builds:
        found = _uv_variant(build.spec.options)
        if found is None:
            continue
        variant, rank = found
        key = uv_key(build.spec, variant)
        flavour = INSTALL_ONLY if variant else INSTALL_ONLY_STRIPPED
        if key not in chosen or rank < chosen[key][0]:
            chosen[key] = (rank, build, flavour, variant)
    entries = {}
    for key, (_, build, flavour, variant) in sorted(chosen.items()):
        major, minor, patch = (int(part) for part in build.spec.version.split(".")[:3])
        name = build.archives[flavour.name].name
        platform = build.spec.target.uv_platform
        entries[key] = {
            "name": "cpython",
            "arch": {"family": platform.arch, "variant": platform.arch_variant},
            "os": platform.os,
            "libc": platform.libc,
            "major": major,
            "minor": minor,
            "patch": patch,
            "prerelease": "",
            "url": url_of[name],
            "sha256": sha_of[name],
            "variant": variant or None,
            "build": build.release,
        }
    return entries


def _notes(tag: str, builds: list[Build], sizes: dict[str, int]) -> str:
    lines = [
        f"# {tag}",
        "",
        "| archive | target | CPython | options | size |",
        "| --- | --- | --- | --- | --- |",
    ]
    for build in builds:
        for path in build.archives.values():
            size = f"{sizes[path.name] / 1e6:.1f} MB"
            spec = build.spec
            row = (f"`{path.name}`", spec.target.triple, spec.version, str(spec.options), size)
            lines.append(f"| {' | '.join(row)} |")
    for build in builds:
        tools = build.sbom.get("metadata", {}).get("tools", {}).get("components", [])
        image = next((f"{t['name']}:{t['version']}" for t in tools if t.get("type") == "platform"), "?")
        crt = ", ".join(build.document.get("crt_features", []))
        lines += ["", f"## {build.spec.target.triple} {build.spec.options}", ""]
        lines += [f"- C library: {crt}", f"- build image: `{image}`", ""]
        lines += ["| component | version | license |", "| --- | --- | --- |"]
        for component in build.sbom.get("components", []):
            license_ = " ".join(x.get("expression", "") for x in component.get("licenses", []))
            lines.append(f"| {component.get('name')} | {component.get('version')} | {license_} |")
    return "\n".join(lines) + "\n"


def make_release(fulls: list[Path], out: Path, tag: str, base_url: str) -> Path:
    """Writes the release folder `out` (replaced when complete) from `fulls`."""
    if not fulls:
        raise PyfreightError("no full archives given (and none in dist/): build some with `make linux-…`")
    if not base_url.startswith(("https://", "http://", "file://")):
        raise PyfreightError(
            f"--base-url {base_url}: give an https:// or file:// URL of the release's folder"
        )
    # Nothing is read from an archive before it passed validation: they come from the internet.
    files = sorted((_files_of(f.resolve()) for f in fulls), key=lambda found: found[1][FULL.name].name)
    failed = []
    for parsed, archives in files:
        for path in archives.values():
            say(f"release: validating {path.name}")
            problems = validate(path, parsed[0].target.triple)
            if problems:
                more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
                failed.append(f"{path.name}: {problems[0]}{more}")
    if failed:
        raise PyfreightError("archives failed validation, nothing released:\n  " + "\n  ".join(failed))
    builds = [_build_of(parsed, archives) for parsed, archives in files]
    paths = sorted((p for b in builds for p in b.archives.values()), key=lambda p: p.name)
    names = [p.name for p in paths]
    if len(set(names)) != len(names):
        raise PyfreightError("two archives of the same name were given")
    sha_of = {p.name: file_sha256(p) for p in paths}
    sizes = {p.name: p.stat().st_size for p in paths}
    url_of = {name: f"{base_url.rstrip('/')}/{quote(name)}" for name in names}

    temporary = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    temporary.mkdir(parents=True)
    try:
        for path in paths:
            shutil.copyfile(path, temporary / path.name)
        (temporary / "SHA256SUMS").write_text("".join(f"{sha_of[n]}  {n}\n" for n in names))
        index = _uv_entries(builds, url_of, sha_of)
        (temporary / "downloads.json").write_text(json.dumps(index, indent=2, sort_keys=True) + "\n")
        summary = {
            "tag": tag,
            "archives": [
                {
                    "name": path.name,
                    "target": build.spec.target.triple,
                    "version": build.spec.version,
                    "options": str(build.spec.options),
                    "flavour": flavour,
                    "size": sizes[path.name],
                    "sha256": sha_of[path.name],
                }
                for build in builds
                for flavour, path in sorted(build.archives.items())
            ],
        }
        (temporary / "release.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n")
        (temporary / "RELEASE_NOTES.md").write_text(_notes(tag, builds, sizes))
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise
    if out.exists():
        if not (out / "release.json").is_file():
            shutil.rmtree(temporary, ignore_errors=True)
            raise PyfreightError(f"{out} exists and is not a release folder: choose another -o")
        shutil.rmtree(out)
    temporary.rename(out)
    return out
