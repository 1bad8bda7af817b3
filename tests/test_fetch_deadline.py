"""Fetching against slow places: a dripping or stalled mirror is given up at the file's
deadline and the next place is used; large downloads are never silent."""

from __future__ import annotations

import contextlib
import http.server
import io
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from pyfreight.sources import fetch
from pyfreight.sources.fetch import deadline_s, fetch_source

SERVER_LIFETIME_S = 8.0  # every server below stops itself after this, whatever happens

Route = Callable[[http.server.BaseHTTPRequestHandler, threading.Event], None]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    monkeypatch.delenv("PYFREIGHT_MIRRORS", raising=False)


@pytest.fixture
def serve() -> Iterator[Callable[..., str]]:
    """Starts real HTTP servers on loopback answering `routes` (path -> writer); returns
    the base URL. Writers get an event that is set when the server stops. HTTP/1.0
    closes the connection after each response, HTTP/1.1 keeps it open."""
    stops: list[Callable[[], None]] = []

    def start(routes: dict[str, Route], protocol: str = "HTTP/1.0") -> str:
        stop = threading.Event()

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = protocol

            def do_GET(self) -> None:
                route = routes.get(self.path)
                if route is None:
                    self.send_error(404)
                    return
                with contextlib.suppress(OSError):  # the client gave up on us
                    route(self, stop)

            def log_message(self, *args: object) -> None:
                pass

        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True).start()
        timer = threading.Timer(SERVER_LIFETIME_S, lambda: (stop.set(), httpd.shutdown()))
        timer.daemon = True
        timer.start()

        def close() -> None:
            timer.cancel()
            stop.set()
            httpd.shutdown()
            httpd.server_close()

        stops.append(close)
        return f"http://127.0.0.1:{httpd.server_address[1]}"

    yield start
    for close in stops:
        close()


def headers(handler: http.server.BaseHTTPRequestHandler, size: int) -> None:
    handler.send_response(200)
    handler.send_header("Content-Length", str(size))
    handler.end_headers()


def dripping(size: int, every_s: float) -> Route:
    """Announces `size` bytes, then sends one byte every `every_s` seconds."""

    def route(handler: http.server.BaseHTTPRequestHandler, stop: threading.Event) -> None:
        headers(handler, size)
        for _ in range(size):
            if stop.wait(every_s):
                return
            handler.wfile.write(b"x")

    return route


def in_pieces(data: bytes, pieces: list[tuple[int, float]]) -> Route:
    """Sends `data` as (bytes, pause after) pieces, then whatever is left at once."""

    def route(handler: http.server.BaseHTTPRequestHandler, stop: threading.Event) -> None:
        headers(handler, len(data))
        sent = 0
        for n, pause in pieces:
            handler.wfile.write(data[sent : sent + n])
            sent += n
            if pause and stop.wait(pause):
                return
        handler.wfile.write(data[sent:])

    return route


def leftovers(cache):
    return sorted(p.name for p in cache.iterdir()) if cache.exists() else []


@pytest.fixture
def short_deadline(monkeypatch):
    """A 1 s deadline for the small test files (the 64 KiB/s term adds under 0.1 s)."""
    monkeypatch.setattr(fetch, "DEADLINE_BASE_S", 1.0)


SLOW_REASON = re.compile(r"slower than 64 KiB/s: (\d+) of 5000 bytes after (\d+) s")


def test_dripping_mirror_is_abandoned_for_the_next(
    tmp_path, serve, source_factory, short_deadline, monkeypatch
):
    src = source_factory()  # 5000 bytes
    base = serve({f"/{src.file}": dripping(src.size, 0.5)})
    folder = tmp_path / "origin"  # a local folder mirror holding the good file
    monkeypatch.setenv("PYFREIGHT_MIRRORS", f"{base} {folder}")
    cache = tmp_path / "downloads"
    messages: list[str] = []
    started = time.monotonic()
    path = fetch_source(src, cache, offline=True, log=messages.append)
    elapsed = time.monotonic() - started
    assert 0.9 < elapsed < 2.5, elapsed  # the 1 s deadline, not the 60 s read timeout
    assert path.read_bytes() == (folder / src.file).read_bytes()
    warning = next(m for m in messages if "slower than" in m)
    assert f"mirror {base}" in warning
    match = SLOW_REASON.search(warning)
    assert match is not None, warning
    assert 0 < int(match.group(1)) < 5 and match.group(2) in ("1", "2")
    assert messages[-1].endswith(f"from mirror {folder}")
    assert leftovers(cache) == [src.file]  # no .part left behind


def test_every_place_too_slow_gives_the_reason_per_origin(
    tmp_path, serve, source_factory, short_deadline, monkeypatch
):
    from pyfreight.errors import PyfreightError

    # Here the deadline is enforced by the check after each read alone: the socket's wait
    # is not shortened (as where http.client's socket cannot be reached).
    monkeypatch.setattr(fetch, "_shorten_wait", lambda raw, deadline: None)
    src = source_factory()
    base = serve({f"/{src.file}": dripping(src.size, 0.5)})
    monkeypatch.setenv("PYFREIGHT_MIRRORS", base)
    cache = tmp_path / "downloads"
    started = time.monotonic()
    with pytest.raises(PyfreightError) as err:
        fetch_source(src, cache, offline=True, log=lambda m: None)
    assert time.monotonic() - started < 2.5
    line = next(x.strip() for x in str(err.value).splitlines() if "slower than" in x)
    assert re.fullmatch(rf"mirror {re.escape(base)}: {SLOW_REASON.pattern}", line), line
    assert leftovers(cache) == []


@pytest.mark.parametrize("protocol", ["HTTP/1.0", "HTTP/1.1"])
def test_stalled_mirror_is_given_up_at_the_deadline(tmp_path, serve, source_factory, monkeypatch, protocol):
    """Bytes come for 1 s, then none. The deadline is 1.5 s, the read timeout 6 s: the
    wait for the next byte must be cut to what is left of the deadline (0.5 s), so the
    origin is given up at 1.5 s, not at 7 s when a full read timeout would end."""
    monkeypatch.setattr(fetch, "DEADLINE_BASE_S", 1.5)
    monkeypatch.setattr(fetch, "READ_TIMEOUT_S", 6.0)
    src = source_factory()
    data = (tmp_path / "origin" / src.file).read_bytes()
    pieces = [(100, 0.1)] * 10 + [(0, SERVER_LIFETIME_S)]  # 1 s of bytes, then silence
    base = serve({f"/{src.file}": in_pieces(data, pieces)}, protocol)
    monkeypatch.setenv("PYFREIGHT_MIRRORS", f"{base} {tmp_path / 'origin'}")
    messages: list[str] = []
    started = time.monotonic()
    fetch_source(src, tmp_path / "downloads", offline=True, log=messages.append)
    elapsed = time.monotonic() - started
    assert 1.4 < elapsed < 5.0, elapsed
    reason = [m for m in messages if "slower than" in m]
    assert reason and re.search(r"slower than 64 KiB/s: 1000 of 5000 bytes after \d+ s$", reason[0]), messages


def test_fast_large_download_reports_progress_lines_without_a_terminal(
    tmp_path, serve, source_factory, monkeypatch
):
    monkeypatch.setattr(sys, "stderr", io.StringIO())  # not a TTY
    monkeypatch.setattr(fetch, "CHUNK", 64 * 1024)  # several reads even on loopback
    monkeypatch.setattr(fetch, "PROGRESS_EVERY_S", 0.3)
    data = bytes(range(256)) * 8192  # 2 MiB, above the 1 MB threshold
    src = source_factory(name="big-1.0.tar", data=data)
    # a slow first fifth (only the time-based lines can report it), then full speed
    pieces = [(len(data) // 100, 0.05)] * 20
    base = serve({f"/{src.file}": in_pieces(data, pieces)})
    monkeypatch.setenv("PYFREIGHT_MIRRORS", base)
    messages: list[str] = []
    path = fetch_source(src, tmp_path / "downloads", offline=True, log=messages.append)
    assert path.read_bytes() == data
    lines = [m for m in messages if m.startswith("fetching ")]
    pattern = re.compile(r"fetching big-1\.0\.tar: (\d+\.\d) of 2\.1 MB, \d+(\.\d)? (MB|kB)/s")
    assert lines and all(pattern.fullmatch(m) for m in lines), lines
    done = [float(pattern.fullmatch(m).group(1)) for m in lines]
    assert done == sorted(done)
    assert any(d < 0.5 for d in done), lines  # within the slow first fifth: the clock
    assert sum(d >= 0.5 for d in done) >= 3, lines  # the quarters
    assert messages[-1].startswith("fetched big-1.0.tar (2.1 MB)")
    assert sys.stderr.getvalue() == ""


def test_small_download_and_terminal_show_no_progress_lines(tmp_path, serve, source_factory, monkeypatch):
    monkeypatch.setattr(fetch, "CHUNK", 64 * 1024)
    big = bytes(range(256)) * 8192
    small = b"s" * 900_000  # below the 1 MB threshold
    src_big = source_factory(name="big-1.0.tar", data=big)
    src_small = source_factory(name="small-1.0.tar", data=small)
    base = serve({f"/{s.file}": in_pieces(s_data, []) for s, s_data in ((src_big, big), (src_small, small))})
    monkeypatch.setenv("PYFREIGHT_MIRRORS", base)

    monkeypatch.setattr(sys, "stderr", io.StringIO())
    messages: list[str] = []
    fetch_source(src_small, tmp_path / "downloads", offline=True, log=messages.append)
    assert not [m for m in messages if m.startswith("fetching ")], messages

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    messages = []
    fetch_source(src_big, tmp_path / "downloads", offline=True, log=messages.append)
    assert not [m for m in messages if m.startswith("fetching ")], messages
    assert "big-1.0.tar" in terminal.getvalue() and "B/s" in terminal.getvalue()  # the tqdm bar


def test_deadline_grows_with_size_at_the_minimum_throughput(monkeypatch):
    assert fetch.DEADLINE_BASE_S == 30 and fetch.MIN_THROUGHPUT_KIB_S == 64
    assert deadline_s(0) == 30
    assert deadline_s(64 * 1024 * 100) == pytest.approx(130)  # 100 s of 64 KiB/s more
    assert deadline_s(53_153_930) == pytest.approx(30 + 811.1, abs=0.1)  # largest pinned source
    monkeypatch.setattr(fetch, "DEADLINE_BASE_S", 1.0)
    monkeypatch.setattr(fetch, "MIN_THROUGHPUT_KIB_S", 1)
    assert deadline_s(2048) == pytest.approx(3)
