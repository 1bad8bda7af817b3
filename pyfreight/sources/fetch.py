"""Fetching pinned sources into the download cache.

Order of places tried: the cache itself, PYFREIGHT_MIRRORS (local folders or base URLs,
looked up by file name), the upstream URLs, then Debian's source pool. Bytes are written
to a temporary name, checked for size and sha256, and only then renamed into the cache,
so the cache never holds a file that was not verified."""

from __future__ import annotations

import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import requests
from tqdm import tqdm

from pyfreight.errors import PyfreightError
from pyfreight.hashing import file_sha256
from pyfreight.leftovers import owned
from pyfreight.sources.mirrors import find_debian_mirrors, pool_url
from pyfreight.sources.recipes import Source

CONNECT_TIMEOUT_S = 5  # an unreachable upstream must cost seconds, not minutes
READ_TIMEOUT_S = 60
CHUNK = 1 << 20


class VerificationError(Exception):
    """The bytes from one origin were not the pinned ones."""


@dataclass(frozen=True)
class Origin:
    """One place a file may be had from: a local path or a URL."""

    label: str  # where the bytes come from, as shown to the user
    location: str

    @property
    def is_url(self) -> bool:
        return re.match(r"^(https?|ftp)://", self.location) is not None


def configured_mirrors() -> list[str]:
    """PYFREIGHT_MIRRORS: local folders or base URLs, separated by spaces or commas."""
    return [m for m in re.split(r"[\s,]+", os.environ.get("PYFREIGHT_MIRRORS", "")) if m]


def origins_for(source: Source, offline: bool, debian_mirror: str | None) -> list[Origin]:
    found = [Origin(f"mirror {m}", f"{m.rstrip('/')}/{source.file}") for m in configured_mirrors()]
    if offline:
        return found
    found += [Origin(f"upstream {u}", u) for u in source.urls]
    if source.debian and debian_mirror:
        url = pool_url(debian_mirror, source.debian.package, source.debian.file)
        found.append(Origin(f"Debian pool {url}", url))
    return found


def verify_file(path: Path, source: Source, origin: str) -> None:
    """Raises VerificationError unless `path` has the pinned size and sha256."""
    size = path.stat().st_size
    if size != source.size:
        raise VerificationError(f"{source.file} from {origin}: size {size} bytes, expected {source.size}")
    actual = file_sha256(path)
    if actual != source.sha256:
        raise VerificationError(f"{source.file} from {origin}: sha256 {actual}, expected {source.sha256}")


def _stream_url(url: str) -> Iterator[bytes]:
    with requests.get(url, stream=True, timeout=(CONNECT_TIMEOUT_S, READ_TIMEOUT_S)) as resp:
        if resp.status_code != 200:
            raise OSError(f"HTTP {resp.status_code}")
        yield from resp.iter_content(CHUNK)


def _stream_path(path: str) -> Iterator[bytes]:
    with open(path.removeprefix("file://"), "rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def _copy_limited(chunks: Iterable[bytes], out: BinaryIO, source: Source, label: str) -> None:
    """Writes chunks, stopping as soon as more bytes arrive than the pin allows."""
    interactive = sys.stderr.isatty()
    with tqdm(
        total=source.size,
        unit="B",
        unit_scale=True,
        desc=source.file,
        disable=not interactive,
        leave=False,
    ) as bar:
        written = 0
        for chunk in chunks:
            written += len(chunk)
            if written > source.size:
                raise VerificationError(
                    f"{source.file} from {label}: more than the pinned {source.size} bytes"
                )
            out.write(chunk)
            bar.update(len(chunk))


def _try_origin(origin: Origin, source: Source, cache_dir: Path) -> Path:
    fd, tmp_name = tempfile.mkstemp(prefix=owned(f".{source.file}"), suffix=".part", dir=cache_dir)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            chunks = _stream_url(origin.location) if origin.is_url else _stream_path(origin.location)
            _copy_limited(chunks, out, source, origin.label)
        verify_file(tmp, source, origin.label)
        final = cache_dir / source.file
        tmp.chmod(0o644)
        os.replace(tmp, final)
        return final
    finally:
        tmp.unlink(missing_ok=True)


def fetch_source(
    source: Source,
    cache_dir: Path,
    offline: bool = False,
    debian_mirror: str | None = None,
    log: Callable[[str], object] = print,
) -> Path:
    """Returns the verified cached file for `source`, fetching it when needed."""
    cache_dir.mkdir(parents=True, exist_ok=True)
    cached = cache_dir / source.file
    if cached.exists():
        try:
            verify_file(cached, source, f"cache {cached}")
            return cached
        except VerificationError as exc:
            log(f"warning: {exc}; removing it and fetching again")
            cached.unlink()
    if debian_mirror is None and not offline:
        try:
            debian_mirror = find_debian_mirrors().archive
        except PyfreightError:
            debian_mirror = None
    attempts: list[str] = []
    for origin in origins_for(source, offline, debian_mirror):
        try:
            path = _try_origin(origin, source, cache_dir)
        except VerificationError as exc:
            log(f"warning: rejected {exc}")
            attempts.append(f"rejected: {exc}")
            continue
        except (OSError, requests.RequestException) as exc:
            attempts.append(f"{origin.label}: {_short(exc)}")
            continue
        log(f"fetched {source.file} ({source.size / 1e6:.1f} MB) from {origin.label}")
        return path
    tried = "\n  ".join(attempts) or "(no place to fetch from)"
    hint = (
        "add a folder holding it to PYFREIGHT_MIRRORS"
        if offline
        else "put the file in PYFREIGHT_MIRRORS, or check the network and PYFREIGHT_DEBIAN_MIRROR"
    )
    raise PyfreightError(f"could not fetch {source.file} (sha256 {source.sha256}):\n  {tried}\n{hint}")


def _short(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text if len(text) < 160 else text[:157] + "..."


def copy_verified(source: Source, cache_dir: Path, dest: Path) -> None:
    """Copies a cached source to dest after verifying it once more."""
    cached = cache_dir / source.file
    verify_file(cached, source, f"cache {cached}")
    shutil.copyfile(cached, dest)
