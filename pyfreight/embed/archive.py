"""Opening a full distribution archive for `pyfreight embed`: only what linking needs is
extracted (PYTHON.json, the object files and static libraries, the headers) unless the
caller also wants the install tree (the in-memory importer packs its stdlib)."""

from __future__ import annotations

import json
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import open_tar
from pyfreight.logs import say

LINK_MEMBERS = ("python/PYTHON.json", "python/build/", "python/install/include/", "python/licenses/")


@dataclass(frozen=True)
class OpenedArchive:
    root: Path  # the folder holding PYTHON.json; every path in it is relative to this
    document: dict[str, Any]

    @property
    def build_info(self) -> dict[str, Any]:
        info: dict[str, Any] = self.document["build_info"]
        return info

    @property
    def version(self) -> str:
        version: str = self.document["python_major_minor_version"]
        return version

    @property
    def include_dir(self) -> Path:
        return self.path(self.document["python_paths"]["include"])

    @property
    def python_exe(self) -> Path:
        return self.path(self.document["python_exe"])

    @property
    def stdlib_dir(self) -> Path:
        return self.path(self.document["python_paths"]["stdlib"])

    def path(self, relative: str) -> Path:
        return self.root / relative


def _wanted(name: str, whole_tree: bool) -> bool:
    if whole_tree:
        return name.startswith("python/")
    return any(name == m.rstrip("/") or name.startswith(m) for m in LINK_MEMBERS)


def open_archive(archive: Path, scratch: Path, whole_tree: bool = False) -> OpenedArchive:
    """Extracts `archive` (a -full.tar.zst, or an already extracted folder holding
    PYTHON.json) below `scratch` and reads its PYTHON.json."""
    if archive.is_dir():
        root = archive / "python" if (archive / "python" / "PYTHON.json").is_file() else archive
    elif archive.is_file():
        say(f"embed: extracting {archive.name}{' (whole tree)' if whole_tree else ''}")
        try:
            with open_tar(archive) as tar:
                for member in tar:
                    if _wanted(member.name, whole_tree):
                        tar.extract(member, scratch, filter="tar")
        except (tarfile.TarError, OSError) as exc:
            raise PyfreightError(f"{archive}: not a readable distribution archive ({exc})") from exc
        root = scratch / "python"
    else:
        raise PyfreightError(f"{archive}: no such archive")
    document_path = root / "PYTHON.json"
    if not document_path.is_file():
        raise PyfreightError(
            f"{archive}: no python/PYTHON.json; embed needs a full archive "
            "(cpython-…-full.tar.zst): install_only archives carry no object files"
        )
    document = json.loads(document_path.read_text())
    if "build_info" not in document:
        raise PyfreightError(f"{archive}: PYTHON.json has no build_info, so there is nothing to link")
    return OpenedArchive(root=root, document=document)
