/*
 * _pyfreight_memory: read-only access to the module blob linked into the executable.
 *
 * The blob (layout: docs/memory-importer.md, writer: blobformat.py) sits between the linker symbols
 * pyfreight_blob_start and pyfreight_blob_end, defined by the generated blob.S.  Every accessor
 * returns read-only memoryviews over that static memory, so nothing is copied until marshal.loads()
 * builds the code object.  The module keeps no mutable state: the blob is immutable and is
 * re-validated whenever the module is executed (once per interpreter), which costs a few
 * microseconds.
 *
 * Builds against CPython 3.13, 3.14 and 3.15.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <marshal.h>
#include <stdint.h>
#include <string.h>

extern const unsigned char pyfreight_blob_start[];
extern const unsigned char pyfreight_blob_end[];

/* Static code objects (embed --static-code, static_code.c): a module's code laid out in
 * the executable's data, so nothing is unmarshalled. Without them, or for a module they
 * do not hold, the marshalled code in the blob is loaded. */
#ifdef PYFREIGHT_STATIC_CODE
extern PyObject *pyfreight_static_code(uint32_t index);
#else
static inline PyObject *pyfreight_static_code(uint32_t index) { (void)index; return NULL; }
#endif
/* How many module bodies ran from static code, reported by info() (the tests' proof). */
static unsigned long long static_code_loads;

#define BLOB_MAGIC "PYFRMEM\0"
#define BLOB_VERSION 1u
#define HEADER_SIZE 96u
#define MODULE_ENTRY_SIZE 48u
#define RESOURCE_ENTRY_SIZE 32u

#define FLAG_PACKAGE 0x01u
#define FLAG_NAMESPACE 0x02u
#define FLAG_HAS_SOURCE 0x04u
#define FLAG_BOOTSTRAP 0x08u
#define FLAG_COMPRESSED 0x20u

#ifdef PYFREIGHT_ZSTD
/* zstd's stable API (zstd.h), declared here: the archive ships libzstd.a, not its header. */
size_t ZSTD_decompress(void *dst, size_t dstCapacity, const void *src, size_t compressedSize);
unsigned long long ZSTD_getFrameContentSize(const void *src, size_t srcSize);
unsigned ZSTD_isError(size_t code);
const char *ZSTD_getErrorName(size_t code);
#define ZSTD_CONTENTSIZE_ERROR (0ULL - 2)
#endif

#define BOOTSTRAP_NAME "_pyfreight_finder"

typedef struct {
    uint32_t module_count;
    uint32_t resource_count;
    uint64_t module_index;
    uint64_t resource_index;
    uint64_t strings;
    uint64_t strings_size;
    uint64_t size;
} blob_header;

typedef struct {
    const char *name;
    size_t name_len;
    uint32_t flags;
    uint64_t code_off, code_len, source_off, source_len;
} module_entry;

typedef struct {
    const char *package;
    size_t package_len;
    const char *path;
    size_t path_len;
    uint64_t data_off, data_len;
} resource_entry;

/* Little-endian loads through memcpy: the blob is only 16-byte aligned per section and the host
   may be big-endian in principle. */
static uint32_t
le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t
le64(const unsigned char *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static size_t
blob_size(void)
{
    return (size_t)(pyfreight_blob_end - pyfreight_blob_start);
}

static void
read_header(blob_header *h)
{
    const unsigned char *b = pyfreight_blob_start;
    h->module_count = le32(b + 32);
    h->resource_count = le32(b + 36);
    h->module_index = le64(b + 40);
    h->resource_index = le64(b + 48);
    h->strings = le64(b + 56);
    h->strings_size = le64(b + 64);
    h->size = le64(b + 88);
}

static void
read_module(const blob_header *h, uint32_t i, module_entry *m)
{
    const unsigned char *p = pyfreight_blob_start + h->module_index + (uint64_t)i * MODULE_ENTRY_SIZE;
    m->name = (const char *)pyfreight_blob_start + h->strings + le32(p);
    m->name_len = le32(p + 4);
    m->flags = le32(p + 8);
    m->code_off = le64(p + 16);
    m->code_len = le64(p + 24);
    m->source_off = le64(p + 32);
    m->source_len = le64(p + 40);
}

static void
read_resource(const blob_header *h, uint32_t i, resource_entry *r)
{
    const unsigned char *p = pyfreight_blob_start + h->resource_index + (uint64_t)i * RESOURCE_ENTRY_SIZE;
    r->package = (const char *)pyfreight_blob_start + h->strings + le32(p);
    r->package_len = le32(p + 4);
    r->path = (const char *)pyfreight_blob_start + h->strings + le32(p + 8);
    r->path_len = le32(p + 12);
    r->data_off = le64(p + 16);
    r->data_len = le64(p + 24);
}

static int
in_bounds(uint64_t off, uint64_t len, uint64_t limit)
{
    return off <= limit && len <= limit - off;
}

/* Checks everything the accessors rely on, so they can index without further checks. */
static int
validate_blob(void)
{
    const unsigned char *b = pyfreight_blob_start;
    size_t size = blob_size();
    if (size < HEADER_SIZE || memcmp(b, BLOB_MAGIC, 8) != 0) {
        PyErr_SetString(PyExc_ImportError,
                        "_pyfreight_memory: the linked module blob has no PYFRMEM header");
        return -1;
    }
    if (le32(b + 8) != BLOB_VERSION || le32(b + 12) != HEADER_SIZE) {
        PyErr_Format(PyExc_ImportError,
                     "_pyfreight_memory: blob format version %u, this module reads version %u",
                     (unsigned)le32(b + 8), BLOB_VERSION);
        return -1;
    }
    long magic = PyImport_GetMagicNumber();
    if (magic == -1) {
        /* 3.13 reads the magic from importlib._bootstrap_external, which the core phase has not
           loaded yet.  Same major.minor is the next best check: releases never change the magic. */
        PyErr_Clear();
        if ((le32(b + 20) >> 16) != ((uint32_t)PY_VERSION_HEX >> 16)) {
            PyErr_Format(PyExc_ImportError,
                         "_pyfreight_memory: blob packed by Python %x, this is %x; repack with this "
                         "interpreter",
                         (unsigned)le32(b + 20), (unsigned)PY_VERSION_HEX);
            return -1;
        }
    }
    else if ((uint32_t)magic != le32(b + 16)) {
        PyErr_Format(PyExc_ImportError,
                     "_pyfreight_memory: blob bytecode magic %u (packed by Python %x) does not match "
                     "this interpreter's %ld; repack with this interpreter",
                     (unsigned)(le32(b + 16) & 0xffff), (unsigned)le32(b + 20), magic & 0xffff);
        return -1;
    }
    blob_header h;
    read_header(&h);
    if (h.size != size
        || !in_bounds(h.module_index, (uint64_t)h.module_count * MODULE_ENTRY_SIZE, size)
        || !in_bounds(h.resource_index, (uint64_t)h.resource_count * RESOURCE_ENTRY_SIZE, size)
        || !in_bounds(h.strings, h.strings_size, size)) {
        PyErr_SetString(PyExc_ImportError, "_pyfreight_memory: blob sections out of bounds");
        return -1;
    }
    for (uint32_t i = 0; i < h.module_count; i++) {
        const unsigned char *p = b + h.module_index + (uint64_t)i * MODULE_ENTRY_SIZE;
        module_entry m;
        read_module(&h, i, &m);
        if (!in_bounds(le32(p), m.name_len, h.strings_size) || !in_bounds(m.code_off, m.code_len, size)
            || !in_bounds(m.source_off, m.source_len, size)) {
            PyErr_Format(PyExc_ImportError, "_pyfreight_memory: module entry %u out of bounds", i);
            return -1;
        }
#ifndef PYFREIGHT_ZSTD
        if (m.flags & FLAG_COMPRESSED) {
            PyErr_SetString(PyExc_ImportError,
                            "_pyfreight_memory: the blob is compressed, this executable has no zstd");
            return -1;
        }
#endif
    }
    for (uint32_t i = 0; i < h.resource_count; i++) {
        const unsigned char *p = b + h.resource_index + (uint64_t)i * RESOURCE_ENTRY_SIZE;
        resource_entry r;
        read_resource(&h, i, &r);
        if (!in_bounds(le32(p), r.package_len, h.strings_size)
            || !in_bounds(le32(p + 8), r.path_len, h.strings_size) || !in_bounds(r.data_off, r.data_len, size)) {
            PyErr_Format(PyExc_ImportError, "_pyfreight_memory: resource entry %u out of bounds", i);
            return -1;
        }
    }
    return 0;
}

/* Byte-wise order, shorter first on a common prefix: the order of Python's sorted() on bytes. */
static int
compare(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    if (c != 0) {
        return c;
    }
    return alen < blen ? -1 : (alen > blen ? 1 : 0);
}

/* Index of the module called name, or -1. */
static int64_t
lookup_module(const blob_header *h, const char *name, size_t len)
{
    uint32_t lo = 0, hi = h->module_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        module_entry m;
        read_module(h, mid, &m);
        int c = compare(m.name, m.name_len, name, len);
        if (c == 0) {
            return mid;
        }
        if (c < 0) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return -1;
}

/* First resource whose (package, path) is >= the key; path NULL means "the package's first". */
static uint32_t
lower_bound_resource(const blob_header *h, const char *pkg, size_t pkg_len, const char *path, size_t path_len)
{
    uint32_t lo = 0, hi = h->resource_count;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        resource_entry r;
        read_resource(h, mid, &r);
        int c = compare(r.package, r.package_len, pkg, pkg_len);
        if (c == 0 && path != NULL) {
            c = compare(r.path, r.path_len, path, path_len);
        }
        if (c < 0) {
            lo = mid + 1;
        }
        else {
            hi = mid;
        }
    }
    return lo;
}

static PyObject *
view(uint64_t off, uint64_t len)
{
    /* PyBUF_READ: the memory is in .rodata and must never be written through the view. */
    return PyMemoryView_FromMemory((char *)(pyfreight_blob_start + off), (Py_ssize_t)len, PyBUF_READ);
}

/* Module m's code or source as bytes: a copy of the blob's, or its zstd frame decompressed. */
static PyObject *
unpacked(const module_entry *m, uint64_t off, uint64_t len)
{
    const unsigned char *src = pyfreight_blob_start + off;
    if (!(m->flags & FLAG_COMPRESSED)) {
        return PyBytes_FromStringAndSize((const char *)src, (Py_ssize_t)len);
    }
#ifdef PYFREIGHT_ZSTD
    unsigned long long size = ZSTD_getFrameContentSize(src, (size_t)len);
    if (size >= ZSTD_CONTENTSIZE_ERROR || size > (unsigned long long)PY_SSIZE_T_MAX) {
        PyErr_Format(PyExc_ImportError,
                     "_pyfreight_memory: module %.*s is damaged in this program file (no frame "
                     "size); copy or download the program again",
                     (int)m->name_len, m->name);
        return NULL;
    }
    PyObject *bytes = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (bytes == NULL) {
        return NULL;
    }
    /* The functions, not the macros: their asserts would put the headers' paths (__FILE__)
       into the object, and the executable would depend on the work folder. */
    /* Each frame carries its content's checksum, which this verifies: damaged bytes fail here
       rather than run as wrong code. */
    size_t got = ZSTD_decompress(PyBytes_AsString(bytes), (size_t)size, src, (size_t)len);
    if (ZSTD_isError(got) || got != size) {
        Py_DECREF(bytes);
        PyErr_Format(PyExc_ImportError,
                     "_pyfreight_memory: module %.*s is damaged in this program file (%s); copy or "
                     "download the program again",
                     (int)m->name_len, m->name, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
        return NULL;
    }
    return bytes;
#else
    PyErr_SetString(PyExc_ImportError, "_pyfreight_memory: the blob is compressed, this executable has no zstd");
    return NULL;
#endif
}

/* A module's code object, unmarshalled from the blob (decompressed first if need be). */
static PyObject *
load_code(const module_entry *m)
{
    if (!(m->flags & FLAG_COMPRESSED)) {
        return PyMarshal_ReadObjectFromString((const char *)pyfreight_blob_start + m->code_off,
                                              (Py_ssize_t)m->code_len);
    }
    PyObject *bytes = unpacked(m, m->code_off, m->code_len);
    if (bytes == NULL) {
        return NULL;
    }
    PyObject *code = PyMarshal_ReadObjectFromString(PyBytes_AsString(bytes), PyBytes_Size(bytes));
    Py_DECREF(bytes);
    return code;
}

/* UTF-8 of a str argument; a name that cannot be encoded (lone surrogates) cannot be packed. */
static const char *
utf8_arg(PyObject *arg, Py_ssize_t *len, int *absent)
{
    *absent = 0;
    if (!PyUnicode_Check(arg)) {
        PyErr_Format(PyExc_TypeError, "expected str, got %.100s", Py_TYPE(arg)->tp_name);
        return NULL;
    }
    const char *s = PyUnicode_AsUTF8AndSize(arg, len);
    if (s == NULL && PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        *absent = 1;
    }
    return s;
}

PyDoc_STRVAR(find_doc,
             "find(name, /)\n--\n\n"
             "Return (flags, code, source) for a packed module, or None. code and source are read-only\n"
             "memoryviews over the executable's data (code is None for a namespace package, source is\n"
             "None unless sources were packed).");

static PyObject *
memory_find(PyObject *module, PyObject *arg)
{
    Py_ssize_t len;
    int absent;
    const char *name = utf8_arg(arg, &len, &absent);
    if (name == NULL) {
        if (absent) {
            Py_RETURN_NONE;
        }
        return NULL;
    }
    blob_header h;
    read_header(&h);
    int64_t i = lookup_module(&h, name, (size_t)len);
    if (i < 0) {
        Py_RETURN_NONE;
    }
    module_entry m;
    read_module(&h, (uint32_t)i, &m);
    PyObject *code, *source;
    if (m.flags & FLAG_NAMESPACE) {
        code = Py_NewRef(Py_None);
    }
    else if ((code = view(m.code_off, m.code_len)) == NULL) {
        return NULL;
    }
    if (!(m.flags & FLAG_HAS_SOURCE)) {
        source = Py_NewRef(Py_None);
    }
    else if ((source = view(m.source_off, m.source_len)) == NULL) {
        Py_DECREF(code);
        return NULL;
    }
    PyObject *flags = PyLong_FromUnsignedLong(m.flags);
    if (flags == NULL) {
        Py_DECREF(code);
        Py_DECREF(source);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(3, flags, code, source);
    Py_DECREF(flags);
    Py_DECREF(code);
    Py_DECREF(source);
    return result;
}

/* The entry of a packed, importable module named by a str argument; 0 when there is none. */
static int
entry_of(PyObject *arg, module_entry *m)
{
    Py_ssize_t len;
    int absent;
    const char *name = utf8_arg(arg, &len, &absent);
    if (name == NULL) {
        return absent ? 0 : -1;
    }
    blob_header h;
    read_header(&h);
    int64_t i = lookup_module(&h, name, (size_t)len);
    if (i < 0) {
        return 0;
    }
    read_module(&h, (uint32_t)i, m);
    return (m->flags & FLAG_BOOTSTRAP) ? 0 : 1;
}

PyDoc_STRVAR(code_doc,
             "code(name, /)\n--\n\n"
             "Return a packed module's code object (as unmarshalled, co_filename not yet fixed), or\n"
             "None for a namespace package or a name not packed.");

static PyObject *
memory_code(PyObject *module, PyObject *arg)
{
    module_entry m;
    int found = entry_of(arg, &m);
    if (found < 0) {
        return NULL;
    }
    if (!found || (m.flags & FLAG_NAMESPACE)) {
        Py_RETURN_NONE;
    }
    return load_code(&m);
}

PyDoc_STRVAR(source_doc,
             "source(name, /)\n--\n\n"
             "Return a packed module's source as bytes, or None when sources were not packed.");

static PyObject *
memory_source(PyObject *module, PyObject *arg)
{
    module_entry m;
    int found = entry_of(arg, &m);
    if (found < 0) {
        return NULL;
    }
    if (!found || !(m.flags & FLAG_HAS_SOURCE)) {
        Py_RETURN_NONE;
    }
    return unpacked(&m, m.source_off, m.source_len);
}

PyDoc_STRVAR(resource_doc,
             "resource(package, path, /)\n--\n\n"
             "Return a read-only memoryview of a packed data file, or None. path is relative to the\n"
             "package directory and uses '/'.");

static PyObject *
memory_resource(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "resource() takes 2 arguments (%zd given)", nargs);
        return NULL;
    }
    Py_ssize_t pkg_len, path_len;
    int absent;
    const char *pkg = utf8_arg(args[0], &pkg_len, &absent);
    if (pkg == NULL) {
        if (absent) {
            Py_RETURN_NONE;
        }
        return NULL;
    }
    const char *path = utf8_arg(args[1], &path_len, &absent);
    if (path == NULL) {
        if (absent) {
            Py_RETURN_NONE;
        }
        return NULL;
    }
    blob_header h;
    read_header(&h);
    uint32_t i = lower_bound_resource(&h, pkg, (size_t)pkg_len, path, (size_t)path_len);
    if (i < h.resource_count) {
        resource_entry r;
        read_resource(&h, i, &r);
        if (compare(r.package, r.package_len, pkg, (size_t)pkg_len) == 0
            && compare(r.path, r.path_len, path, (size_t)path_len) == 0) {
            return view(r.data_off, r.data_len);
        }
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(resources_doc,
             "resources(package, /)\n--\n\n"
             "Return the sorted list of data file paths packed for package.");

static PyObject *
memory_resources(PyObject *module, PyObject *arg)
{
    Py_ssize_t pkg_len;
    int absent;
    const char *pkg = utf8_arg(arg, &pkg_len, &absent);
    if (pkg == NULL) {
        return absent ? PyList_New(0) : NULL;
    }
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    blob_header h;
    read_header(&h);
    for (uint32_t i = lower_bound_resource(&h, pkg, (size_t)pkg_len, NULL, 0); i < h.resource_count; i++) {
        resource_entry r;
        read_resource(&h, i, &r);
        if (compare(r.package, r.package_len, pkg, (size_t)pkg_len) != 0) {
            break;
        }
        PyObject *s = PyUnicode_DecodeUTF8(r.path, (Py_ssize_t)r.path_len, "strict");
        if (s == NULL || PyList_Append(list, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(s);
    }
    return list;
}

PyDoc_STRVAR(modules_doc,
             "modules()\n--\n\n"
             "Return a tuple of (name, flags) for every packed module, sorted by name (the finder\n"
             "itself is left out).");

static PyObject *
memory_modules(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    blob_header h;
    read_header(&h);
    PyObject *list = PyList_New(0);
    if (list == NULL) {
        return NULL;
    }
    for (uint32_t i = 0; i < h.module_count; i++) {
        module_entry m;
        read_module(&h, i, &m);
        if (m.flags & FLAG_BOOTSTRAP) {
            continue;
        }
        PyObject *item = Py_BuildValue("(s#k)", m.name, (Py_ssize_t)m.name_len, (unsigned long)m.flags);
        if (item == NULL || PyList_Append(list, item) < 0) {
            Py_XDECREF(item);
            Py_DECREF(list);
            return NULL;
        }
        Py_DECREF(item);
    }
    PyObject *result = PyList_AsTuple(list);
    Py_DECREF(list);
    return result;
}

PyDoc_STRVAR(info_doc,
             "info()\n--\n\n"
             "Return the blob header as a dict (for diagnostics).");

static PyObject *
memory_info(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    const unsigned char *b = pyfreight_blob_start;
    blob_header h;
    read_header(&h);
    return Py_BuildValue("{s:I,s:y#,s:I,s:I,s:I,s:I,s:I,s:K,s:K}", "version", (unsigned)le32(b + 8),
                         "bytecode_magic", (const char *)b + 16, (Py_ssize_t)4, "hexversion",
                         (unsigned)le32(b + 20), "flags", (unsigned)le32(b + 24), "optimize",
                         (unsigned)le32(b + 28), "modules", (unsigned)h.module_count, "resources",
                         (unsigned)h.resource_count, "size", (unsigned long long)h.size,
                         "static_code_loads", static_code_loads);
}

PyDoc_STRVAR(install_doc,
             "install()\n--\n\n"
             "Execute the packed finder and put it on sys.meta_path (idempotent). Returns the finder.\n"
             "Meant to be called during the core initialization phase, before the first import of a\n"
             "non-frozen stdlib module.");

static PyObject *
memory_install(PyObject *module, PyObject *Py_UNUSED(ignored))
{
    PyObject *modules = PySys_GetObject("modules"); /* borrowed */
    if (modules == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_pyfreight_memory.install(): no sys.modules");
        return NULL;
    }
    PyObject *finder_mod = NULL, *code = NULL, *result = NULL;
    if (PyDict_GetItemStringRef(modules, BOOTSTRAP_NAME, &finder_mod) < 0) {
        return NULL;
    }
    if (finder_mod == NULL) {
        blob_header h;
        read_header(&h);
        int64_t i = lookup_module(&h, BOOTSTRAP_NAME, strlen(BOOTSTRAP_NAME));
        module_entry m;
        if (i >= 0) {
            read_module(&h, (uint32_t)i, &m);
        }
        if (i < 0 || !(m.flags & FLAG_BOOTSTRAP)) {
            PyErr_SetString(PyExc_ImportError, "_pyfreight_memory: the blob carries no " BOOTSTRAP_NAME);
            return NULL;
        }
        /* The finder is made at every start: from static code when the build has it. */
        code = pyfreight_static_code((uint32_t)i);
        static_code_loads += code != NULL;
        if (code == NULL && !PyErr_Occurred()) {
            code = load_code(&m);
        }
        if (code == NULL) {
            return NULL;
        }
        if (!PyCode_Check(code)) {
            PyErr_SetString(PyExc_ImportError, "_pyfreight_memory: " BOOTSTRAP_NAME " is not a code object");
            goto done;
        }
        finder_mod = PyModule_New(BOOTSTRAP_NAME);
        if (finder_mod == NULL) {
            goto done;
        }
        PyObject *dict = PyModule_GetDict(finder_mod); /* borrowed */
        PyObject *builtins = PyEval_GetBuiltins();      /* borrowed; the interpreter's without a frame */
        if (builtins == NULL || PyDict_SetItemString(dict, "__builtins__", builtins) < 0) {
            goto done;
        }
        /* Registered before running, like any import, so a failure leaves no half module behind. */
        if (PyDict_SetItemString(modules, BOOTSTRAP_NAME, finder_mod) < 0) {
            goto done;
        }
        PyObject *ran = PyEval_EvalCode(code, dict, dict);
        if (ran == NULL) {
            (void)PyDict_DelItemString(modules, BOOTSTRAP_NAME);
            goto done;
        }
        Py_DECREF(ran);
    }
    result = PyObject_CallMethod(finder_mod, "install", "O", module);
done:
    Py_XDECREF(code);
    Py_XDECREF(finder_mod);
    return result;
}

PyDoc_STRVAR(exec_module_doc,
             "exec_module(module, /)\n--\n\n"
             "Loader.exec_module for a module whose __spec__ came from the packed finder: unmarshal its\n"
             "code, point co_filename at __spec__.origin and run it in the module's namespace.");

/* Written in C so that no Python frame of the loader sits between importlib's frames and the
   module's: running the code through importlib's _call_with_frames_removed then lets the
   interpreter trim the import machinery from tracebacks exactly as for modules loaded from files. */
static PyObject *
memory_exec_module(PyObject *self, PyObject *module)
{
    PyObject *spec = NULL, *name = NULL, *origin = NULL, *code = NULL, *dict = NULL;
    PyObject *imp = NULL, *bootstrap = NULL, *builtins = NULL, *exec = NULL, *result = NULL;

    if ((spec = PyObject_GetAttrString(module, "__spec__")) == NULL
        || (name = PyObject_GetAttrString(spec, "name")) == NULL
        || (origin = PyObject_GetAttrString(spec, "origin")) == NULL) {
        goto done;
    }
    Py_ssize_t len;
    int absent;
    const char *utf8 = utf8_arg(name, &len, &absent);
    if (utf8 == NULL && !absent) {
        goto done;
    }
    blob_header h;
    read_header(&h);
    int64_t i = utf8 == NULL ? -1 : lookup_module(&h, utf8, (size_t)len);
    module_entry m;
    if (i >= 0) {
        read_module(&h, (uint32_t)i, &m);
    }
    if (i < 0 || (m.flags & (FLAG_NAMESPACE | FLAG_BOOTSTRAP)) || !PyUnicode_Check(origin)) {
        PyErr_Format(PyExc_ImportError, "%R has no packed code", name);
        goto done;
    }
    code = pyfreight_static_code((uint32_t)i);
    static_code_loads += code != NULL;
    if (code == NULL && !PyErr_Occurred()) {
        code = load_code(&m);
    }
    if (code == NULL || (imp = PyImport_ImportModule("_imp")) == NULL) {
        goto done;
    }
    /* pack.py compiled with the path relative to the root; the root is only known at run time. */
    PyObject *fixed = PyObject_CallMethod(imp, "_fix_co_filename", "OO", code, origin);
    if (fixed == NULL) {
        goto done;
    }
    Py_DECREF(fixed);
    /* No bytecode file stands behind the module. */
    if (PyObject_SetAttrString(module, "__cached__", Py_None) < 0) {
        goto done;
    }
    if ((dict = PyObject_GetAttrString(module, "__dict__")) == NULL
        || (bootstrap = PyImport_ImportModule("_frozen_importlib")) == NULL
        || (builtins = PyImport_ImportModule("builtins")) == NULL
        || (exec = PyObject_GetAttrString(builtins, "exec")) == NULL) {
        goto done;
    }
    result = PyObject_CallMethod(bootstrap, "_call_with_frames_removed", "OOO", exec, code, dict);
    if (result != NULL) {
        Py_SETREF(result, Py_NewRef(Py_None));
    }
done:
    Py_XDECREF(spec);
    Py_XDECREF(name);
    Py_XDECREF(origin);
    Py_XDECREF(code);
    Py_XDECREF(dict);
    Py_XDECREF(imp);
    Py_XDECREF(bootstrap);
    Py_XDECREF(builtins);
    Py_XDECREF(exec);
    return result;
}

static PyMethodDef memory_methods[] = {
    {"exec_module", memory_exec_module, METH_O, exec_module_doc},
    {"find", memory_find, METH_O, find_doc},
    {"code", memory_code, METH_O, code_doc},
    {"source", memory_source, METH_O, source_doc},
    {"resource", _PyCFunction_CAST(memory_resource), METH_FASTCALL, resource_doc},
    {"resources", memory_resources, METH_O, resources_doc},
    {"modules", memory_modules, METH_NOARGS, modules_doc},
    {"info", memory_info, METH_NOARGS, info_doc},
    {"install", memory_install, METH_NOARGS, install_doc},
    {NULL, NULL, 0, NULL},
};

static int
memory_exec(PyObject *module)
{
    if (validate_blob() < 0) {
        return -1;
    }
    if (PyModule_AddIntConstant(module, "PACKAGE", FLAG_PACKAGE) < 0
        || PyModule_AddIntConstant(module, "NAMESPACE", FLAG_NAMESPACE) < 0
        || PyModule_AddIntConstant(module, "HAS_SOURCE", FLAG_HAS_SOURCE) < 0
        || PyModule_AddIntConstant(module, "BOOTSTRAP", FLAG_BOOTSTRAP) < 0
        || PyModule_AddIntConstant(module, "COMPRESSED", FLAG_COMPRESSED) < 0) {
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot memory_slots[] = {
    {Py_mod_exec, memory_exec},
#ifdef Py_mod_multiple_interpreters
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_NOT_USED},
#endif
    {0, NULL},
};

static struct PyModuleDef memory_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_pyfreight_memory",
    .m_doc = "Modules and package data packed into this executable's read-only data.",
    .m_size = 0,
    .m_methods = memory_methods,
    .m_slots = memory_slots,
};

PyMODINIT_FUNC
PyInit__pyfreight_memory(void)
{
    return PyModuleDef_Init(&memory_module);
}
