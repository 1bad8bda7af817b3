"""Fetching: falls through unreachable places, rejects bad bytes, never caches them."""

from __future__ import annotations

import dataclasses
import functools
import http.server
import socket
import threading
import time

import pytest

from pyfreight.errors import PyfreightError
from pyfreight.sources.fetch import fetch_source


@pytest.fixture
def server(tmp_path):
    """A real HTTP server on loopback serving tmp_path/served/."""
    served = tmp_path / "served"
    served.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(served))
    handler.log_message = lambda *a: None
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("PYFREIGHT_MIRRORS", raising=False)


def closed_port_url(name):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/{name}"


def cache_of(tmp_path):
    return tmp_path / "downloads"


def leftovers(cache):
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


def test_falls_through_unreachable_upstream_to_debian_pool(tmp_path, server, source_factory):
    served, base = server
    src = source_factory()
    pool = served / "pool/main/d/demo"
    pool.mkdir(parents=True)
    (pool / "demo_1.0.orig.tar").write_bytes((tmp_path / "origin" / src.file).read_bytes())
    from pyfreight.sources.recipes import DebianLocation

    src = dataclasses.replace(
        src,
        urls=(closed_port_url(src.file), f"{base}/missing/{src.file}"),
        debian=DebianLocation("demo", "demo_1.0.orig.tar"),
    )
    messages = []
    started = time.monotonic()
    path = fetch_source(src, cache_of(tmp_path), debian_mirror=base, log=messages.append)
    assert time.monotonic() - started < 10
    assert path.read_bytes() == (tmp_path / "origin" / src.file).read_bytes()
    assert "Debian pool" in messages[-1]
    assert leftovers(cache_of(tmp_path)) == [src.file]


def test_wrong_hash_is_rejected_and_not_cached(tmp_path, server, source_factory):
    served, base = server
    src = source_factory()
    (served / src.file).write_bytes(b"y" * src.size)  # same size, other bytes
    src = dataclasses.replace(src, urls=(f"{base}/{src.file}",))
    with pytest.raises(PyfreightError) as err:
        fetch_source(src, cache_of(tmp_path), debian_mirror=None, log=lambda m: None)
    text = str(err.value)
    assert src.sha256 in text and f"{base}/{src.file}" in text
    import hashlib

    assert hashlib.sha256(b"y" * src.size).hexdigest() in text
    assert leftovers(cache_of(tmp_path)) == []


def test_truncated_file_is_rejected_then_good_mirror_used(tmp_path, server, source_factory, monkeypatch):
    served, base = server
    src = source_factory()
    good = (tmp_path / "origin" / src.file).read_bytes()
    (served / src.file).write_bytes(good[:100])
    mirror_dir = tmp_path / "mirror"
    mirror_dir.mkdir()
    monkeypatch.setenv("PYFREIGHT_MIRRORS", f"{base} {mirror_dir}")
    with pytest.raises(PyfreightError, match="size 100 bytes"):
        fetch_source(src, cache_of(tmp_path), offline=True, log=lambda m: None)
    assert leftovers(cache_of(tmp_path)) == []
    (mirror_dir / src.file).write_bytes(good)
    path = fetch_source(src, cache_of(tmp_path), offline=True, log=lambda m: None)
    assert path.read_bytes() == good


def test_oversized_download_is_cut_off(tmp_path, server, source_factory):
    served, base = server
    src = source_factory()
    (served / src.file).write_bytes(b"z" * (src.size * 3))
    src = dataclasses.replace(src, urls=(f"{base}/{src.file}",))
    with pytest.raises(PyfreightError, match="more than the pinned"):
        fetch_source(src, cache_of(tmp_path), debian_mirror=None, log=lambda m: None)
    assert leftovers(cache_of(tmp_path)) == []


def test_every_source_failing_gives_one_message(tmp_path, source_factory):
    src = source_factory()
    src = dataclasses.replace(src, urls=(closed_port_url(src.file),))
    with pytest.raises(PyfreightError) as err:
        fetch_source(src, cache_of(tmp_path), debian_mirror=None, log=lambda m: None)
    text = str(err.value)
    assert text.startswith(f"could not fetch {src.file}")
    assert "upstream http://127.0.0.1" in text
    assert leftovers(cache_of(tmp_path)) == []


def test_offline_never_touches_upstream(tmp_path, server, source_factory):
    served, base = server
    src = source_factory()
    (served / src.file).write_bytes((tmp_path / "origin" / src.file).read_bytes())
    src = dataclasses.replace(src, urls=(f"{base}/{src.file}",))
    with pytest.raises(PyfreightError, match="PYFREIGHT_MIRRORS"):
        fetch_source(src, cache_of(tmp_path), offline=True, log=lambda m: None)


def test_corrupted_cache_is_replaced(tmp_path, source_factory, monkeypatch):
    src = source_factory()
    cache = cache_of(tmp_path)
    cache.mkdir()
    (cache / src.file).write_bytes(b"garbage")
    monkeypatch.setenv("PYFREIGHT_MIRRORS", str(tmp_path / "origin"))
    messages = []
    path = fetch_source(src, cache, offline=True, log=messages.append)
    assert path.read_bytes() == (tmp_path / "origin" / src.file).read_bytes()
    assert any("cache" in m and "removing" in m for m in messages)


def test_cached_file_is_used_without_network(tmp_path, source_factory):
    src = source_factory()
    cache = cache_of(tmp_path)
    cache.mkdir()
    (cache / src.file).write_bytes((tmp_path / "origin" / src.file).read_bytes())
    src = dataclasses.replace(src, urls=(closed_port_url(src.file),))
    assert fetch_source(src, cache, debian_mirror=None, log=lambda m: None) == cache / src.file
