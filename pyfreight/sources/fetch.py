"""Fetching pinned sources into the download cache.

Order of places tried: the cache itself, PYFREIGHT_MIRRORS (local folders or base URLs,
looked up by file name), the upstream URLs, then Debian's source pool. Bytes are written
to a temporary name, checked for size and sha256, and only then renamed into the cache,
so the cache never holds a file that was not verified.

Every download has an overall deadline derived from the pinned size (`deadline_s`): a
mirror that drips bytes is abandoned with a reason and the next place is tried, instead
of keeping the build busy forever. Large downloads report progress: a bar on a terminal,
a plain line every PROGRESS_EVERY_S seconds or quarter of the file otherwise."""

from __future__ import annotations

import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Callable, Generator, Iterable
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import requests
import urllib3.exceptions
from tqdm import tqdm

from pyfreight.errors import PyfreightError
from pyfreight.hashing import file_sha256
from pyfreight.leftovers import owned
from pyfreight.sources import pypi
from pyfreight.sources.mirrors import find_debian_mirrors, pool_url
from pyfreight.sources.recipes import Source

CONNECT_TIMEOUT_S = 5  # an unreachable upstream must cost seconds, not minutes
READ_TIMEOUT_S = 60  # longest wait for any byte at all; also kept below the file's deadline
CHUNK = 1 << 20  # the most one read asks for; a read returns whatever has arrived

# The overall deadline of one file from one place: DEADLINE_BASE_S + size / MIN_THROUGHPUT.
# The base pays for DNS, connecting, TLS, redirects and a server slow to start answering,
# and is the whole budget of a small file. 64 KiB/s (about half a megabit) is far below
# any working mirror or a busy CI runner's link, so an honest download never hits it,
# yet a stuck or dripping mirror gives up in bounded time: the largest pinned source
# (about 53 MB) gets 30 s + 811 s, some 14 minutes, instead of forever.
DEADLINE_BASE_S = 30.0
MIN_THROUGHPUT_KIB_S = 64

# Progress: files from PROGRESS_MIN_BYTES up are never silent. On a terminal tqdm draws a
# bar; otherwise (CI logs, pipes) a line goes to `log` every PROGRESS_EVERY_S seconds and
# at each quarter of the file, often enough to show life, rarely enough for a log.
PROGRESS_MIN_BYTES = 1_000_000
PROGRESS_EVERY_S = 10.0


class VerificationError(Exception):
    """The bytes from one origin were not the pinned ones."""


class TooSlow(OSError):
    """One origin did not deliver the file within its deadline."""


def deadline_s(size: int) -> float:
    """Seconds one origin may take to deliver a file of `size` bytes."""
    return DEADLINE_BASE_S + size / (MIN_THROUGHPUT_KIB_S * 1024)


PIP_ORIGIN = "pip:"  # the location of a wheel pip downloads from its configured index


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
    if source.pypi:
        wanted = f"{source.pypi.project}=={source.pypi.version}"
        found.append(Origin(f"the package index (pip download {wanted})", PIP_ORIGIN))
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


def _stream_url(url: str, deadline: float) -> Generator[bytes, None, None]:
    """The body of `url` as it arrives, raw (no content decoding: the pin is of the bytes
    served). No single wait for bytes outlasts READ_TIMEOUT_S or the `deadline`
    (time.monotonic()); waiting too long raises TimeoutError."""
    read_timeout = min(READ_TIMEOUT_S, max(deadline - time.monotonic(), 0.001))
    try:
        resp = requests.get(
            url,
            stream=True,
            timeout=(CONNECT_TIMEOUT_S, read_timeout),
            headers={"Accept-Encoding": "identity"},
        )
    except requests.exceptions.ReadTimeout:
        raise TimeoutError(f"no answer for {read_timeout:.0f} s") from None
    with resp:
        if resp.status_code != 200:
            raise OSError(f"HTTP {resp.status_code}")
        raw = resp.raw
        while True:
            _shorten_wait(raw, deadline)
            try:
                chunk = raw.read1(CHUNK, decode_content=False)
            except urllib3.exceptions.ReadTimeoutError:
                raise TimeoutError(f"no data for {READ_TIMEOUT_S} s") from None
            except urllib3.exceptions.HTTPError as exc:
                raise OSError(f"download broken: {exc}") from exc
            if not chunk:
                return
            yield chunk


def _shorten_wait(raw: urllib3.HTTPResponse, deadline: float) -> None:
    """Lets the next socket read wait no longer than what is left of the deadline, so that
    a mirror that stops sending altogether is given up at the deadline, not up to a read
    timeout later. Best effort: the socket is reached through http.client's objects, and
    where it cannot be the fixed read timeout (at most the deadline) still bounds the wait."""
    sock = getattr(raw.connection, "sock", None)
    if sock is None:
        # http.client drops the connection's socket when the server will close it after
        # this response; the response keeps reading from it through its buffered file.
        body = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(body, "raw", None), "_sock", None)
    if isinstance(sock, socket.socket):
        sock.settimeout(min(READ_TIMEOUT_S, max(deadline - time.monotonic(), 0.001)))


def _stream_path(path: str) -> Generator[bytes, None, None]:
    with open(path.removeprefix("file://"), "rb") as fh:
        while chunk := fh.read(CHUNK):
            yield chunk


def _mb(n: float) -> str:
    return f"{n / 1e6:.1f}"


def _rate(per_s: float) -> str:
    return f"{per_s / 1e6:.1f} MB/s" if per_s >= 1e6 else f"{per_s / 1e3:.0f} kB/s"


class _Progress:
    """Shows how a download goes: the tqdm bar on a terminal; otherwise, for files of
    PROGRESS_MIN_BYTES or more, a line through `log` every PROGRESS_EVERY_S seconds or
    quarter of the file."""

    def __init__(self, source: Source, log: Callable[[str], object]) -> None:
        self.source = source
        self.log = log
        self.started = self.last_line = time.monotonic()
        self.quarter = 0
        interactive = sys.stderr.isatty()
        self.lines = not interactive and source.size >= PROGRESS_MIN_BYTES
        self.bar = tqdm(
            total=source.size,
            unit="B",
            unit_scale=True,
            desc=source.file,
            disable=not interactive,
            leave=False,
        )

    def update(self, step: int, done: int) -> None:
        self.bar.update(step)
        if not self.lines or done >= self.source.size:
            return  # the line saying it was fetched follows
        now = time.monotonic()
        quarter = 4 * done // self.source.size
        if quarter > self.quarter or now - self.last_line >= PROGRESS_EVERY_S:
            self.quarter, self.last_line = quarter, now
            elapsed = max(now - self.started, 1e-6)
            self.log(
                f"fetching {self.source.file}: {_mb(done)} of {_mb(self.source.size)} MB, "
                f"{_rate(done / elapsed)}"
            )

    def close(self) -> None:
        self.bar.close()


def _copy_limited(
    chunks: Iterable[bytes],
    out: BinaryIO,
    source: Source,
    label: str,
    started: float,
    log: Callable[[str], object],
) -> None:
    """Writes chunks, stopping as soon as more bytes arrive than the pin allows, or when
    the file's deadline, counted from `started` (time.monotonic()), passes before the last
    byte has come."""
    deadline = started + deadline_s(source.size)
    written = 0

    def too_slow() -> TooSlow:
        return TooSlow(
            f"slower than {MIN_THROUGHPUT_KIB_S} KiB/s: {written} of {source.size} bytes "
            f"after {time.monotonic() - started:.0f} s"
        )

    progress = _Progress(source, log)
    try:
        for chunk in chunks:
            written += len(chunk)
            if written > source.size:
                raise VerificationError(
                    f"{source.file} from {label}: more than the pinned {source.size} bytes"
                )
            out.write(chunk)
            progress.update(len(chunk), written)
            if time.monotonic() > deadline and written < source.size:
                raise too_slow()
    except TimeoutError:
        if time.monotonic() >= deadline:
            raise too_slow() from None
        raise
    finally:
        progress.close()


def _try_origin(origin: Origin, source: Source, cache_dir: Path, log: Callable[[str], object]) -> Path:
    started = time.monotonic()
    fd, tmp_name = tempfile.mkstemp(prefix=owned(f".{source.file}"), suffix=".part", dir=cache_dir)
    tmp = Path(tmp_name)
    try:
        with (
            os.fdopen(fd, "wb") as out,
            tempfile.TemporaryDirectory(dir=cache_dir, prefix=owned(".pip")) as pip,
        ):
            if origin.location == PIP_ORIGIN:
                wheel = pypi.download_wheel(source, Path(pip), deadline_s(source.size))
                chunks = _stream_path(str(wheel))
            elif origin.is_url:
                chunks = _stream_url(origin.location, started + deadline_s(source.size))
            else:
                chunks = _stream_path(origin.location)
            with closing(chunks):  # a connection given up on is closed now, not when collected
                _copy_limited(chunks, out, source, origin.label, started, log)
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
            path = _try_origin(origin, source, cache_dir, log)
        except VerificationError as exc:
            log(f"warning: rejected {exc}")
            attempts.append(f"rejected: {exc}")
            continue
        except TooSlow as exc:
            log(f"warning: gave up on {source.file} from {origin.label}: {exc}")
            attempts.append(f"{origin.label}: {_short(exc)}")
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
