"""Whether signals can break the interpreter's C code: every hash, HMAC, random.seed on a
string and the compression round trips, each computed while an interval timer delivers
a signal every 20 µs, against the same computed without signals.

A signal's frame is written below the interrupted function's stack pointer (past the
128-byte red zone on x86_64). Code whose frame a post-link optimizer removed while its
locals stayed where they were (BOLT's allocation combiner on HACL's SHA-2 with frame
pointers) is overwritten by it: a wrong digest or a crash. Nothing else in check-install
delivers signals during C loops, so such a build passes every other check.

    python signal_stress.py      # under signals: prints {name: result} as JSON

`stress(python)` (for the checks) runs that in a child, which may crash, and compares its
results with this process's. Run by the interpreter under test; needs only the stdlib."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

INTERVAL = 20e-6  # seconds between signals: hundreds land inside every hash of DATA
# How long each workload is repeated under signals (at least once). Delivering a signal
# every 20 µs slows a process down about a hundredfold on a virtual machine, so the
# inputs are small: 256 KiB to hash, 64 KiB to compress (bz2 of 1 MiB took 10 s).
SECONDS_EACH = 0.1
DATA = bytes(range(256)) * 1024
COMPRESSED = DATA[: 64 * 1024]
KEY = b"pyfreight signal key"
# HACL's hashes and HMACs (the built-in modules), whatever hashlib prefers for a name.
BUILTIN_HASHES = {
    "_md5": ("md5",),
    "_sha1": ("sha1",),
    "_sha2": ("sha224", "sha256", "sha384", "sha512"),
    "_sha3": ("sha3_224", "sha3_256", "sha3_384", "sha3_512", "shake_128", "shake_256"),
    "_blake2": ("blake2b", "blake2s"),
}


def _hex(digest: Any) -> str:
    text: str = digest.hexdigest(64) if digest.name.startswith("shake") else digest.hexdigest()
    return text


def _hashing(constructor: Callable[[bytes], Any]) -> Callable[[], str]:
    return lambda: _hex(constructor(DATA))


def _keyed(compute: Callable[[bytes, bytes], bytes]) -> Callable[[], str]:
    return lambda: compute(KEY, DATA).hex()


def _openssl(name: str) -> Callable[[], str]:
    import hashlib

    return lambda: _hex(hashlib.new(name, DATA))


def _hmac(name: str) -> Callable[[], str]:
    import hmac

    return lambda: hmac.digest(KEY, DATA, name).hex()


def _round_trip(module: Any) -> Callable[[], str]:
    def run() -> str:
        packed: bytes = module.compress(COMPRESSED)
        assert module.decompress(packed) == COMPRESSED, "decompressed data differs"
        import hashlib

        return hashlib.sha256(packed).hexdigest()

    return run


def workloads() -> dict[str, Callable[[], str]]:
    """Each workload by name; each returns a text that must not depend on signals."""
    import hashlib
    import random

    work: dict[str, Callable[[], str]] = {}
    for module_name, names in BUILTIN_HASHES.items():
        module = importlib.import_module(module_name)
        for name in names:
            work[f"{module_name}.{name}"] = _hashing(getattr(module, name))
    for name in sorted(hashlib.algorithms_available):
        try:
            hashlib.new(name)
        except ValueError:  # listed by OpenSSL, refused by its default provider
            continue
        work[f"hashlib.new({name!r})"] = _openssl(name)
    for name in ("md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b"):
        work[f"hmac.digest({name!r})"] = _hmac(name)
    try:  # 3.14+: HACL's HMAC, one function per hash
        hacl_hmac = importlib.import_module("_hmac")
    except ImportError:
        pass
    else:
        for attr in sorted(a for a in dir(hacl_hmac) if a.startswith("compute_") and a != "compute_digest"):
            work[f"_hmac.{attr}"] = _keyed(getattr(hacl_hmac, attr))

    def seeded() -> str:
        rng = random.Random()
        rng.seed("x" * len(DATA))  # a str seed is hashed with sha512
        return repr(rng.random())

    work["random.seed(str)"] = seeded
    for module_name in ("zlib", "bz2", "lzma", "compression.zstd"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:  # compression.zstd: 3.14+
            continue
        work[f"{module_name} round trip"] = _round_trip(module)
    return work


def _under_signals() -> None:
    """The child: every workload repeated for SECONDS_EACH with the timer running; the
    workload about to run is named on stderr, so a crash can be told by the parent."""
    import signal

    received = 0

    def count(_signum: int, _frame: object) -> None:
        nonlocal received
        received += 1

    signal.signal(signal.SIGALRM, count)
    results: dict[str, object] = {}
    signal.setitimer(signal.ITIMER_REAL, INTERVAL, INTERVAL)
    for name, work in workloads().items():
        print(name, file=sys.stderr, flush=True)
        seen, deadline = {work()}, time.monotonic() + SECONDS_EACH
        while time.monotonic() < deadline:
            seen.add(work())
        results[name] = sorted(seen)
    signal.setitimer(signal.ITIMER_REAL, 0)
    print(json.dumps({"results": results, "signals": received}))


def stress(python: str) -> str:
    """Runs the workloads under signals in a child of `python` and compares them with
    this process's; raises AssertionError naming what differed or where it crashed."""
    import signal

    if not hasattr(signal, "setitimer"):
        return "no interval timers on this OS: it delivers no asynchronous signals to C code"
    expected = {name: [work()] for name, work in workloads().items()}
    child = subprocess.run([python, __file__], capture_output=True, text=True, timeout=600)
    if child.returncode != 0:
        last = (child.stderr.strip().splitlines() or ["(before any workload)"])[-1]
        how = (
            f"signal {signal.Signals(-child.returncode).name}"
            if child.returncode < 0
            else f"rc {child.returncode}"
        )
        raise AssertionError(f"the interpreter died ({how}) under signals in {last}")
    report = json.loads(child.stdout)
    wrong = sorted(name for name, seen in report["results"].items() if seen != expected.get(name))
    assert set(report["results"]) == set(expected), "the child ran other workloads"
    assert not wrong, f"results differ under signals: {', '.join(wrong)}"
    return f"{len(expected)} workloads, {report['signals']} signals, every result as without them"


if __name__ == "__main__":
    _under_signals()
