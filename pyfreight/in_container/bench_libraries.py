"""The C-library table of `pyfreight bench`: one pyperf benchmark per call into a
library the interpreter links (zlib, bz2, lzma, zstd, the hashes, sqlite3, expat,
_decimal, json, pickle, ssl), run as `bench_libraries.py NAME` by each interpreter
in the same container. Every input is made here from a fixed seed, so each
interpreter works on the same bytes. An interpreter without the module (zstd before
3.14) writes an empty result: its column shows '-' for that row."""

from __future__ import annotations

import contextlib
import functools
import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

# The same text for every interpreter: random.Random(seed) gives the same words on
# every CPython, and words compress as text does (about 3:1 with zlib).
_WORDS = ("the", "of", "and", "to", "in", "is", "was", "for", "that", "on", "as", "with", "by", "at")


def corpus(size: int, seed: int = 3) -> bytes:
    rng = random.Random(seed)
    out = []
    total = 0
    while total < size:
        line = " ".join(rng.choice(_WORDS) + str(rng.randrange(100)) for _ in range(12)) + "\n"
        out.append(line)
        total += len(line)
    return "".join(out).encode()[:size]


MIB = 1 << 20
Payload = Callable[[], object]


def _compression(module_name: str, compress: str, decompress: str, **options: object) -> dict[str, Payload]:
    module = __import__(module_name, fromlist=["_"])
    data = corpus(MIB)
    packed = getattr(module, compress)(data, **options)
    return {
        "compress": lambda: getattr(module, compress)(data, **options),
        "decompress": lambda: getattr(module, decompress)(packed),
    }


def _hash(name: str) -> Payload:
    import hashlib

    data = corpus(MIB)
    return lambda: hashlib.new(name, data).digest()


def _sqlite() -> Payload:
    import sqlite3

    rows = [(i, f"name{i}", i * 0.5) for i in range(20000)]

    def work() -> object:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, value REAL)")
        db.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        db.execute("CREATE INDEX t_name ON t (name)")
        found = db.execute("SELECT count(*), sum(value) FROM t WHERE name LIKE 'name1%'").fetchone()
        db.close()
        return found

    return work


def _expat() -> Payload:
    from xml.parsers import expat

    items = "".join(
        f'<item id="{i}" kind="k{i % 7}"><name>n{i}</name><v>{i * 3}</v></item>' for i in range(20000)
    )
    document = f"<root>{items}</root>".encode()

    def work() -> object:
        parser = expat.ParserCreate()
        seen = []
        parser.StartElementHandler = lambda name, attrs: seen.append(name)
        parser.Parse(document, True)
        return len(seen)

    return work


def _decimal() -> Payload:
    import decimal

    def work() -> object:
        # libmpdec's long arithmetic: square root, logarithm and exponential at 1000
        # digits, and products of the results.
        with decimal.localcontext() as ctx:
            ctx.prec = 1000
            two, ten, three = decimal.Decimal(2), decimal.Decimal(10), decimal.Decimal(3)
            return two.sqrt() * ten.ln() / three.exp()

    return work


def _document() -> object:
    rng = random.Random(5)
    return [
        {
            "id": i,
            "name": f"user{i}",
            "score": rng.random(),
            "tags": ["a", "bb", "ccc"][: i % 4],
            "ok": i % 2 == 0,
        }
        for i in range(5000)
    ]


def _json() -> dict[str, Payload]:
    import json as json_module

    document = _document()
    text = json_module.dumps(document)
    return {"dumps": lambda: json_module.dumps(document), "loads": lambda: json_module.loads(text)}


def _pickle() -> dict[str, Payload]:
    import pickle

    document = _document()
    packed = pickle.dumps(document, protocol=5)
    return {"dumps": lambda: pickle.dumps(document, protocol=5), "loads": lambda: pickle.loads(packed)}


def _tls() -> dict[str, Payload]:
    """A TLS 1.3 handshake and 1 MiB each way over memory BIOs: no sockets, so the
    time is OpenSSL's and the ssl module's only. The certificates are check-install's."""
    import ssl

    certdir = Path(__file__).resolve().parent / "tls"
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(certdir / "localhost.pem")
    client_ctx = ssl.create_default_context(cafile=certdir / "ca.pem")
    data = corpus(MIB)

    def pump(source: ssl.MemoryBIO, sink: ssl.MemoryBIO) -> None:
        chunk = source.read()
        if chunk:
            sink.write(chunk)

    def connect() -> tuple[ssl.SSLObject, ssl.SSLObject, Callable[[], None]]:
        c_in, c_out, s_in, s_out = (ssl.MemoryBIO() for _ in range(4))
        client = client_ctx.wrap_bio(c_in, c_out, server_hostname="localhost")
        server = server_ctx.wrap_bio(s_in, s_out, server_side=True)

        def exchange() -> None:
            pump(c_out, s_in)
            pump(s_out, c_in)

        for _ in range(10):
            for end in (client, server):
                with contextlib.suppress(ssl.SSLWantReadError):
                    end.do_handshake()
            exchange()
        return client, server, exchange

    def handshake() -> object:
        client, _server, _exchange = connect()
        return client.version()

    client, server, exchange = connect()

    def transfer() -> object:
        received = 0
        for start in range(0, len(data), 16384):
            client.write(data[start : start + 16384])
            exchange()
            while True:
                try:
                    received += len(server.read(65536))
                except ssl.SSLWantReadError:
                    break
        assert received == len(data), received
        return received

    return {"handshake": handshake, "transfer": transfer}


def _part(prepare: Callable[[], dict[str, Payload]], part: str) -> Callable[[], Payload]:
    return lambda: prepare()[part]


def benchmarks() -> dict[str, Callable[[], Payload]]:
    """Every benchmark by name, as a function that prepares its input and returns the
    call to time. The names are the rows of the table (cpython/bench.yaml lists them)."""
    table: dict[str, Callable[[], Payload]] = {}
    for module, compress, decompress, options in (
        ("zlib", "compress", "decompress", {"level": 6}),
        ("bz2", "compress", "decompress", {"compresslevel": 9}),
        ("lzma", "compress", "decompress", {"preset": 6}),
        ("compression.zstd", "compress", "decompress", {"level": 3}),
    ):
        short = module.rsplit(".", 1)[-1]
        prepare = functools.partial(_compression, module, compress, decompress, **options)
        for step in ("compress", "decompress"):
            table[f"{short}_{step}"] = _part(prepare, step)
    for name in ("md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b"):
        table[f"hash_{name}"] = functools.partial(_hash, name)
    table["sqlite3_insert_query"] = _sqlite
    table["expat_parse"] = _expat
    table["decimal_functions"] = _decimal
    # encode/decode: pyperformance's json_dumps and pickle rows measure other documents
    for module, prepare_codec in (("json", _json), ("pickle", _pickle)):
        for step, call in (("encode", "dumps"), ("decode", "loads")):
            table[f"{module}_{step}"] = _part(prepare_codec, call)
    table["ssl_handshake"] = _part(_tls, "handshake")
    table["ssl_transfer"] = _part(_tls, "transfer")
    return table


def _timed(call: Payload) -> Callable[[int], float]:
    def run(loops: int) -> float:
        started = time.perf_counter()
        for _ in range(loops):
            call()
        return time.perf_counter() - started

    return run


def _write_empty(argv: list[str]) -> None:
    """The result file of an interpreter that lacks the module: no benchmark in it."""
    output = argv[argv.index("-o") + 1] if "-o" in argv else None
    if output:
        Path(output).write_text(json.dumps({"benchmarks": [], "metadata": {}}))


def main() -> None:
    import pyperf  # type: ignore[import-not-found]  # on PYTHONPATH in the bench container

    name = sys.argv[-1]
    table = benchmarks()
    if name not in table:
        sys.exit(f"bench_libraries.py: no benchmark {name!r}; known: {', '.join(table)}")
    try:
        call = table[name]()
    except ImportError as exc:
        print(f"bench_libraries.py: {name}: {exc}; left out for this interpreter", file=sys.stderr)
        if "--worker" not in sys.argv:
            _write_empty(sys.argv)
        return
    runner = pyperf.Runner(add_cmdline_args=lambda cmd, args: cmd.append(args.benchmark))
    runner.argparser.add_argument("benchmark")
    runner.metadata["description"] = f"pyfreight C-library benchmark {name}"
    runner.bench_time_func(name, _timed(call))


if __name__ == "__main__":
    main()
