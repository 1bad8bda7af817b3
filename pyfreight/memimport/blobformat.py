"""Layout of the in-memory importer's blob: constants, a writer and a reader.

The format is described in docs/memory-importer.md; memimport.c reads the same layout.  This module
must stay importable by any CPython 3.11-3.15 with nothing but the stdlib, because pack.py (run by the
*target* interpreter, not the driver) imports it from the same directory.
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Callable
from dataclasses import dataclass

MAGIC = b"PYFRMEM\0"
FORMAT_VERSION = 1

# magic, version, header size, bytecode magic, python hexversion, blob flags, optimize level,
# module count, resource count, then u64: module index, resource index, strings offset and size,
# data offset and size, total size.
HEADER = struct.Struct("<8sII4sIIIIIQQQQQQQ")
# name offset/length in the string table, flags, reserved, code offset/length, source offset/length.
MODULE_ENTRY = struct.Struct("<IIIIQQQQ")
# package offset/length and path offset/length in the string table, data offset/length.
RESOURCE_ENTRY = struct.Struct("<IIIIQQ")

# Module flags.
FLAG_PACKAGE = 0x01
FLAG_NAMESPACE = 0x02  # always together with FLAG_PACKAGE; no code
FLAG_HAS_SOURCE = 0x04
FLAG_BOOTSTRAP = 0x08  # the finder itself: executed by install(), never imported or listed
FLAG_COMPRESSED = 0x20  # code and source are each one zstd frame (the finder never is)
FLAG_APP = 0x10  # came from --app rather than --stdlib (informational)

# Blob flags.
BLOB_HAS_SOURCES = 0x01
BLOB_COMPRESSED = 0x02  # its modules are compressed (FLAG_COMPRESSED)

BOOTSTRAP_NAME = "_pyfreight_finder"
# The resources of this (never importable) package name are the files of the packed
# distributions' .dist-info folders, as "<folder>/<file>": importlib.metadata reads them
# through the finder's find_distributions().
DISTRIBUTIONS = "_pyfreight_distributions"
# The finder's own resource of this name lists, one per line, the modules left out of an
# application (pack.py --reach, --left-out): importing one fails with a message saying so.
LEFT_OUT = "left-out"
# Sections start on this boundary so the C side could read entries in place; it copies them anyway.
ALIGN = 16


@dataclass(frozen=True)
class Module:
    name: str
    flags: int
    code: bytes
    source: bytes | None = None


@dataclass(frozen=True)
class Resource:
    package: str
    path: str
    data: bytes


@dataclass(frozen=True)
class Blob:
    version: int
    bytecode_magic: bytes
    hexversion: int
    flags: int
    optimize: int
    modules: list[Module]
    resources: list[Resource]


def _pad(buf: bytearray, align: int = ALIGN) -> None:
    buf.extend(b"\0" * (-len(buf) % align))


def _key(text: str) -> bytes:
    # C bisects with memcmp on UTF-8, so both indexes are ordered by the encoded bytes.
    return text.encode("utf-8")


def write_blob(
    modules: list[Module],
    resources: list[Resource],
    *,
    bytecode_magic: bytes,
    hexversion: int,
    optimize: int,
    flags: int = 0,
    compress: Callable[[bytes], bytes] | None = None,
) -> bytes:
    """Serialize modules and resources; the output depends only on the arguments. With
    `compress` (a zstd compressor), every module's code and source but the finder's."""
    modules = sorted(modules, key=lambda m: _key(m.name))
    resources = sorted(resources, key=lambda r: (_key(r.package), _key(r.path)))
    for a, b in itertools.pairwise(modules):
        if a.name == b.name:
            raise ValueError(f"duplicate module {a.name!r}")
    for r1, r2 in itertools.pairwise(resources):
        if (r1.package, r1.path) == (r2.package, r2.path):
            raise ValueError(f"duplicate resource {r1.package!r} {r1.path!r}")

    strings = bytearray()
    string_pos: dict[bytes, int] = {}

    def intern(text: str) -> tuple[int, int]:
        raw = _key(text)
        if raw not in string_pos:
            string_pos[raw] = len(strings)
            # NUL-terminated only so a hexdump reads well; lengths are authoritative.
            strings.extend(raw + b"\0")
        return string_pos[raw], len(raw)

    mod_strings = [intern(m.name) for m in modules]
    res_strings = [(intern(r.package), intern(r.path)) for r in resources]

    module_index_off = HEADER.size + (-HEADER.size % ALIGN)
    resource_index_off = module_index_off + len(modules) * MODULE_ENTRY.size
    resource_index_off += -resource_index_off % ALIGN
    strings_off = resource_index_off + len(resources) * RESOURCE_ENTRY.size
    strings_off += -strings_off % ALIGN
    data_off = strings_off + len(strings)
    data_off += -data_off % ALIGN

    data = bytearray()

    def place(payload: bytes) -> tuple[int, int]:
        _pad(data, 8)
        pos = data_off + len(data)
        data.extend(payload)
        return pos, len(payload)

    mod_index = bytearray()
    for mod, (name_off, name_len) in zip(modules, mod_strings, strict=True):
        shrink = compress if compress is not None and mod.code and not mod.flags & FLAG_BOOTSTRAP else None
        code_off, code_len = place(shrink(mod.code) if shrink else mod.code) if mod.code else (0, 0)
        source = shrink(mod.source) if shrink and mod.source is not None else mod.source
        src_off, src_len = place(source) if source is not None else (0, 0)
        mod_flags = mod.flags | (FLAG_HAS_SOURCE if mod.source is not None else 0)
        mod_flags |= FLAG_COMPRESSED if shrink else 0
        mod_index += MODULE_ENTRY.pack(name_off, name_len, mod_flags, 0, code_off, code_len, src_off, src_len)

    res_index = bytearray()
    for res, ((pkg_off, pkg_len), (path_off, path_len)) in zip(resources, res_strings, strict=True):
        off, size = place(res.data)
        res_index += RESOURCE_ENTRY.pack(pkg_off, pkg_len, path_off, path_len, off, size)

    total = data_off + len(data)
    out = bytearray(
        HEADER.pack(
            MAGIC,
            FORMAT_VERSION,
            HEADER.size,
            bytecode_magic,
            hexversion,
            flags,
            optimize,
            len(modules),
            len(resources),
            module_index_off,
            resource_index_off,
            strings_off,
            len(strings),
            data_off,
            len(data),
            total,
        )
    )
    for offset, chunk in (
        (module_index_off, mod_index),
        (resource_index_off, res_index),
        (strings_off, strings),
        (data_off, data),
    ):
        out.extend(b"\0" * (offset - len(out)))
        out += chunk
    assert len(out) == total
    return bytes(out)


class BlobError(ValueError):
    pass


def zstd_decompressor() -> Callable[[bytes], bytes]:
    """zstd's decompression: the stdlib's (3.14+) or, in the driver, the zstandard package's."""
    try:
        from compression import zstd  # type: ignore[import-not-found, unused-ignore]

        return zstd.decompress  # type: ignore[no-any-return, unused-ignore]
    except ImportError:
        import zstandard

        return zstandard.ZstdDecompressor().decompress


def read_blob(blob: bytes) -> Blob:
    """Parse and bounds-check a blob (the same checks memimport.c makes); compressed
    modules come back decompressed, their flags unchanged."""
    if len(blob) < HEADER.size:
        raise BlobError("blob shorter than its header")
    (
        magic,
        version,
        header_size,
        bytecode_magic,
        hexversion,
        flags,
        optimize,
        n_mod,
        n_res,
        mod_off,
        res_off,
        str_off,
        str_size,
        data_off,
        data_size,
        total,
    ) = HEADER.unpack_from(blob)
    if magic != MAGIC:
        raise BlobError(f"bad magic {magic!r}")
    if version != FORMAT_VERSION:
        raise BlobError(f"unsupported format version {version}")
    if header_size != HEADER.size or total != len(blob):
        raise BlobError("header size or total size mismatch")
    for off, size in (
        (mod_off, n_mod * MODULE_ENTRY.size),
        (res_off, n_res * RESOURCE_ENTRY.size),
        (str_off, str_size),
        (data_off, data_size),
    ):
        if off + size > total:
            raise BlobError("section out of bounds")

    def string(off: int, size: int) -> str:
        if off + size > str_size:
            raise BlobError("string out of bounds")
        return blob[str_off + off : str_off + off + size].decode("utf-8")

    def chunk(off: int, size: int) -> bytes:
        if size and (off < data_off or off + size > data_off + data_size):
            raise BlobError("data out of bounds")
        return blob[off : off + size]

    modules = []
    for i in range(n_mod):
        name_off, name_len, mflags, _, code_off, code_len, src_off, src_len = MODULE_ENTRY.unpack_from(
            blob, mod_off + i * MODULE_ENTRY.size
        )
        source = chunk(src_off, src_len) if mflags & FLAG_HAS_SOURCE else None
        code = chunk(code_off, code_len)
        if mflags & FLAG_COMPRESSED:
            unpack = zstd_decompressor()
            code, source = unpack(code), (unpack(source) if source is not None else None)
        modules.append(Module(string(name_off, name_len), mflags, code, source))
    resources = []
    for i in range(n_res):
        pkg_off, pkg_len, path_off, path_len, off, size = RESOURCE_ENTRY.unpack_from(
            blob, res_off + i * RESOURCE_ENTRY.size
        )
        resources.append(Resource(string(pkg_off, pkg_len), string(path_off, path_len), chunk(off, size)))
    names = [_key(m.name) for m in modules]
    if names != sorted(names) or len(set(names)) != len(names):
        raise BlobError("module index not strictly sorted")
    keys = [(_key(r.package), _key(r.path)) for r in resources]
    if keys != sorted(keys) or len(set(keys)) != len(keys):
        raise BlobError("resource index not strictly sorted")
    return Blob(version, bytecode_magic, hexversion, flags, optimize, modules, resources)
