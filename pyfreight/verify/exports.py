"""What the interpreter's shared image exports, whatever its format: the C API extension
modules link against, and never the symbols of the libraries bundled into it (they would
clash with, or be interposed by, other copies loaded into the same process)."""

from __future__ import annotations

from pathlib import Path

from pyfreight.formats.elf import ElfFacts

BUNDLED_SYMBOL_PREFIXES = (
    "SSL_", "EVP_", "OPENSSL_", "CRYPTO_", "X509_", "BIO_", "sqlite3_", "ffi_", "lzma_", "ZSTD_",
    "XML_", "mpd_", "BZ2_", "Tcl_", "Tk_", "XOpenDisplay", "xcb_", "el_", "uuid_", "deflate", "inflate",
    "initscr", "newwin", "tgetent", "zlibVersion",
)  # fmt: skip
REQUIRED_EXPORTS = ("Py_Initialize", "PyList_New", "PyModule_Create2", "PyArg_ParseTuple")


def bundled_exports(exported: frozenset[str]) -> list[str]:
    """The exported names that belong to a bundled library, sorted."""
    return sorted(s for s in exported if s.startswith(BUNDLED_SYMBOL_PREFIXES))


def missing_c_api(exported: frozenset[str]) -> list[str]:
    """The C API functions extension modules need that are not exported."""
    return [s for s in REQUIRED_EXPORTS if s not in exported]


# What CPython's headers export (PyAPI_FUNC, PyAPI_DATA, PyMODINIT_FUNC): every name of
# the C API, and of its private part, starts so (PY_TIMEOUT_MAX is a constant of it).
C_API_PREFIXES = ("Py", "_Py", "PY_")
# A shared library's init and fini functions, which the C library's crti.o defines in
# every one: musl's are global (glibc's hidden), so a musl libpython exports them.
ELF_INIT_FINI = frozenset({"_init", "_fini"})


def is_libpython(name: str) -> bool:
    """libpython3.X.so…, libpython3.so (the stable ABI's) or libpython3.X.dylib."""
    return name.startswith("libpython3") and (".so" in name or name.endswith(".dylib"))


def libpython_export_problems(facts: ElfFacts) -> list[str]:
    """libpython, the shared library programs embed Python with, exports the C API and
    nothing else: neither a bundled library's symbols nor any other name of its objects.
    libpython3.so, which only needs the versioned library, exports nothing of its own."""
    name = facts.soname or Path(facts.path).name
    if not is_libpython(name) or facts.kind != "ET_DYN":
        return []
    exported = facts.exported - ELF_INIT_FINI
    others = sorted(s for s in exported if not s.startswith(C_API_PREFIXES))
    problems = []
    if others:
        shown = ", ".join(others[:5]) + (f" and {len(others) - 5} more" if len(others) > 5 else "")
        problems.append(f"libpython exports names outside the C API: {shown}")
    if exported and (lacking := missing_c_api(exported)):
        problems.append(f"libpython does not export the C API: {', '.join(lacking)}")
    return problems
