"""The checks every installed tree passes, whatever its operating system, and the one way
checks are registered, run and reported. interpreter_checks.py (Linux, macOS) and
windows_checks.py (Windows, under Wine) import it from their own folder, tell it what
differs for their OS (`TreeFacts`), add only their own checks and call `run_checks`.
Run by the interpreter under test; needs nothing but the stdlib."""

from __future__ import annotations

import importlib
import os
import sys
import sysconfig
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same files, as the package names them
    from pyfreight.in_container.bytecode import bytecode_check
    from pyfreight.in_container.signal_stress import stress
else:  # run as a script, beside which bytecode.py and signal_stress.py are copied
    from bytecode import bytecode_check
    from signal_stress import stress


@dataclass(frozen=True)
class TreeFacts:
    """What the shared checks need to know of the tree's operating system."""

    builtin_required: Sequence[str]  # extension modules that must be built in
    not_importable: Mapping[str, str]  # module or package -> why no check imports it
    tcl_library: Path | None  # where the tree ships Tcl's script library; None: no tkinter
    no_tkinter_reason: str = ""  # why, when tcl_library is None
    # Checks the runner here cannot pass (Wine's gaps) -> why; None: a runner with none.
    # Such a check still runs: a failure is reported under `runner` and not counted.
    runner_limits: Mapping[str, str] | None = None
    runner: str = ""  # the runner's name in the report (Wine)


CheckFn = Callable[[], "str | None"]
_CHECKS: list[tuple[str, Callable[[TreeFacts], str | None]]] = []


def check(name: str) -> Callable[[CheckFn], CheckFn]:
    """Registers an OS's own check: it runs, in the order registered, in `run_checks`."""

    def register(fn: CheckFn) -> CheckFn:
        _CHECKS.append((name, lambda _facts: fn()))
        return fn

    return register


def _shared(name: str) -> Callable[[Callable[[TreeFacts], str | None]], Callable[[TreeFacts], str | None]]:
    def register(fn: Callable[[TreeFacts], str | None]) -> Callable[[TreeFacts], str | None]:
        _CHECKS.append((name, fn))
        return fn

    return register


def run_checks(facts: TreeFacts) -> int:
    """Runs every check, prints a line each and a summary; 1 when any failed."""
    limits = facts.runner_limits or {}
    results: list[tuple[str, str, str]] = []  # (status, name, detail)
    for name, fn in _CHECKS:
        try:
            status, detail = "PASS", fn(facts) or ""
            if name in limits:
                detail = f"passes under {facts.runner} now; drop it from the target's limits. {detail}"
        except Exception:
            detail = traceback.format_exc(limit=3).strip().splitlines()[-1]
            status, detail = (
                (facts.runner.upper(), f"{limits[name]} ({detail})") if name in limits else ("FAIL", detail)
            )
        results.append((status, name, detail))
    width = max(len(name) for _, name, _ in results)
    for status, name, detail in results:
        print(f"{status:<4}  {name:<{width}}  {detail}")
    failed = sum(status == "FAIL" for status, _, _ in results)
    if facts.runner_limits is None:
        print(f"{len(results) - failed} passed, {failed} failed")
    else:
        limited = sum(status not in ("PASS", "FAIL") for status, _, _ in results)
        print(
            f"{len(results) - failed - limited} passed, {limited} failed only under {facts.runner}, "
            f"{failed} failed"
        )
    return 1 if failed else 0


@_shared("extension modules are built in")
def _builtin(facts: TreeFacts) -> str:
    missing = [m for m in facts.builtin_required if m not in sys.builtin_module_names]
    assert not missing, f"not built in: {missing}"
    return f"{len(sys.builtin_module_names)} built-in modules"


@_shared("every stdlib module imports")
def _imports(facts: TreeFacts) -> str:
    failed, count = [], 0
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = sorted(sys.stdlib_module_names)
    for path in sorted(stdlib.rglob("*.py")):
        parts = path.relative_to(stdlib).with_suffix("").parts
        if parts[0] in ("test", "idlelib", "turtledemo", "site-packages", "__phello__") or (
            "tests" in parts or parts[-1] == "__main__" or "-" in parts[-1]
        ):
            continue
        names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    for name in sorted(set(names)):
        dotted = name.split(".")
        if any(".".join(dotted[:depth]) in facts.not_importable for depth in range(1, len(dotted) + 1)):
            continue  # the module, or a package it is in
        try:
            importlib.import_module(name)
            count += 1
        except Exception as exc:
            failed.append(f"{name}: {type(exc).__name__}: {exc}")
    assert not failed, "; ".join(failed[:10])
    return f"{count} modules"


@_shared("the stdlib's bytecode is there and valid for its sources")
def _bytecode(_facts: TreeFacts) -> str:
    return bytecode_check(Path(sysconfig.get_paths()["stdlib"]))


@_shared("TLS handshake with certificate verification")
def _tls(_facts: TreeFacts) -> str:
    import socket
    import ssl
    import threading

    # Our own CA and localhost certificate (EC P-256, valid until 2126), beside this
    # script: the stdlib's test/certdata is absent from install_only_stripped trees.
    # Made with `openssl req -x509` (CA) and `openssl x509 -req` (localhost, SAN
    # localhost and 127.0.0.1); test material only, the key is no secret.
    certdir = Path(__file__).resolve().parent / "tls"
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(certdir / "localhost.pem")
    client_ctx = ssl.create_default_context(cafile=certdir / "ca.pem")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            tls.sendall(tls.recv(100).upper())

    thread = threading.Thread(target=serve)
    thread.start()
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_ctx.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(b"hello")
        reply = tls.recv(100)
        version = tls.version()
    thread.join()
    assert reply == b"HELLO"
    return f"{ssl.OPENSSL_VERSION}, {version}"


@_shared("sqlite3 with FTS5 and JSON")
def _sqlite(_facts: TreeFacts) -> str:
    import sqlite3

    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(body)")
    db.execute("INSERT INTO t VALUES ('static python builds')")
    assert db.execute("SELECT count(*) FROM t WHERE t MATCH 'python'").fetchone() == (1,)
    assert db.execute("""SELECT json_extract('{"a": [1, 2]}', '$.a[1]')""").fetchone() == (2,)
    return sqlite3.sqlite_version


@_shared("sqlite3 can load extensions, off until a program turns it on")
def _sqlite_extensions(_facts: TreeFacts) -> str:
    import sqlite3

    connection = sqlite3.connect(":memory:")
    try:
        connection.load_extension("pf_no_such_extension")
    except sqlite3.OperationalError as exc:
        assert "not authorized" in str(exc), exc
    else:
        raise AssertionError("an extension loaded before enable_load_extension(True)")
    connection.enable_load_extension(True)
    try:
        connection.load_extension("pf_no_such_extension")
    except sqlite3.OperationalError as exc:  # now it is looked for, and not found
        assert "not authorized" not in str(exc), exc
        return "refused before enable_load_extension(True), looked for after"
    raise AssertionError("a missing extension loaded")


@_shared("compression round trips")
def _compression(_facts: TreeFacts) -> None:
    import bz2
    import lzma
    import zlib

    data = b"pyfreight " * 1000
    modules = [bz2, lzma, zlib]
    if sys.version_info >= (3, 14):
        from compression import zstd

        modules.append(zstd)
    for mod in modules:
        assert mod.decompress(mod.compress(data)) == data, mod.__name__


@_shared("hashlib uses OpenSSL, with sha3 and blake2")
def _hashlib(_facts: TreeFacts) -> None:
    import hashlib

    assert hashlib.sha256(b"abc").hexdigest().startswith("ba7816bf")
    for name in ("sha256", "sha3_256", "blake2b", "shake_128", "md5"):
        h = hashlib.new(name, b"abc")
        assert h.hexdigest(*(16,) if name.startswith("shake") else ())
    assert "sha3_256" in hashlib.algorithms_available and hashlib.blake2b(b"x").digest_size == 64
    import _hashlib

    assert _hashlib.new("sha3_256", b"abc").hexdigest()


@_shared("hashes, HMAC, random.seed and compression are right under a 20 µs signal timer")
def _signals(_facts: TreeFacts) -> str:
    return stress(sys.executable)


@_shared("tkinter creates a Tcl interpreter and leaves os.environ as it was")
def _tkinter(facts: TreeFacts) -> str:
    """tkinter.Tcl() evaluates a script, finds its script library where the tree ships
    it and Tcl's modules beside it (msgcat), and leaves os.environ as it found it: Tcl
    is told where its library is while it starts, not through variables left behind
    for every child process to inherit."""
    if facts.tcl_library is None:
        assert "_tkinter" not in sys.builtin_module_names, "_tkinter is built in, yet no Tcl is shipped"
        return facts.no_tkinter_reason
    before = dict(os.environ)
    import tkinter

    tcl = tkinter.Tcl()
    assert dict(os.environ) == before, sorted(set(os.environ.items()) ^ set(before.items()))
    assert tcl.eval("expr {6 * 7}") == "42"
    found = Path(tcl.eval("info library"))
    assert found.resolve() == facts.tcl_library.resolve(), (found, facts.tcl_library)
    msgcat = tcl.eval("package require msgcat")
    return f"Tcl {tcl.eval('info patchlevel')} at {found}, msgcat {msgcat}"
