"""What the interpreter's shared image exports, whatever its format: the C API extension
modules link against, and never the symbols of the libraries bundled into it (they would
clash with, or be interposed by, other copies loaded into the same process)."""

from __future__ import annotations

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
