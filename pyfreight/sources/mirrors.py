"""Debian mirror discovery. Host names never live in the repository: they come from
the environment or from this machine's apt configuration."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from pyfreight.errors import PyfreightError

APT_SOURCES_FILES = ("/etc/apt/sources.list",)
APT_SOURCES_DIR = "/etc/apt/sources.list.d"


@dataclass(frozen=True)
class DebianMirrors:
    """The archive mirror (pool/, dists/) and, if configured, the security mirror."""

    archive: str
    security: str | None = None


def _apt_uris(root: Path) -> list[str]:
    """Every URI apt on this machine is configured with, in file order."""
    uris: list[str] = []
    files = [root / f.lstrip("/") for f in APT_SOURCES_FILES]
    sources_dir = root / APT_SOURCES_DIR.lstrip("/")
    if sources_dir.is_dir():
        files += sorted(sources_dir.glob("*.sources")) + sorted(sources_dir.glob("*.list"))
    for path in files:
        if not path.is_file():
            continue
        for line in path.read_text(errors="replace").splitlines():
            line = line.strip()
            if line.startswith("URIs:"):
                uris += line.split(":", 1)[1].split()
            elif re.match(r"^deb(-src)?\s", line):
                # one-line format: deb [opts] URI suite components
                parts = re.sub(r"\[[^]]*\]", "", line).split()
                if len(parts) >= 2:
                    uris.append(parts[1])
    return uris


def find_debian_mirrors(root: Path = Path("/")) -> DebianMirrors:
    """PYFREIGHT_DEBIAN_MIRROR (and PYFREIGHT_DEBIAN_SECURITY_MIRROR) win; otherwise the
    first archive and security URIs from apt's configuration under `root`."""
    env_archive = os.environ.get("PYFREIGHT_DEBIAN_MIRROR")
    env_security = os.environ.get("PYFREIGHT_DEBIAN_SECURITY_MIRROR")
    uris = [u.rstrip("/") for u in _apt_uris(root) if u.startswith(("http://", "https://"))]
    security = env_security or next((u for u in uris if "security" in u), None)
    archive = env_archive or next((u for u in uris if "security" not in u), None)
    if not archive:
        raise PyfreightError(
            "no Debian mirror known: set PYFREIGHT_DEBIAN_MIRROR to a Debian archive base URL "
            "(the folder holding pool/ and dists/), or configure one in /etc/apt/sources.list.d/"
        )
    return DebianMirrors(archive=archive.rstrip("/"), security=security)


def pool_url(mirror: str, source_package: str, file: str) -> str:
    """URL of a file in Debian's pool: pool/main/<prefix>/<package>/<file>, where the prefix
    is the package's first letter, or its first four letters for lib* packages."""
    prefix = source_package[:4] if source_package.startswith("lib") else source_package[0]
    return f"{mirror.rstrip('/')}/pool/main/{prefix}/{source_package}/{file}"
