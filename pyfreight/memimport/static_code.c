/* The runtime of static code objects (embed --static-code): on a module's first import,
 * the parts of its statically laid out code objects that can only be known in this
 * process are filled in, as CPython's init_code() would for code it unmarshals:
 *   - name strings are interned (one object per name, which dict lookups rely on), reusing
 *     the runtime's own static strings and strings interned before us, and patching every
 *     slot that points at our copy when another copy won;
 *   - frozenset constants are built (their hashes depend on this process's hash seed);
 *   - each code object gets a function version and its quickened (adaptive) bytecode,
 *     which lives in writable data.
 * Only the main interpreter of the process's first initialization is served, and only
 * with debug ranges kept; memimport.c unmarshals in every other case. */
#include "static_code.h"
#include "internal/pycore_hashtable.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_pystate.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_unicodeobject.h"

/* What init_code() does to fresh code objects, by version: the entry point that tracing
 * starts from, and quickening (warm-up counters, and in 3.15 GET_ITER's oparg). */
#if PY_VERSION_HEX >= 0x030F0000
#  include "internal/pycore_opcode_utils.h"
extern void _PyCode_Quicken(_Py_CODEUNIT *instructions, Py_ssize_t size, int enable_counters, int flags);
#  define QUICKEN(interp, code) \
    _PyCode_Quicken(_PyCode_CODE(code), Py_SIZE(code), (interp)->opt_config.specialization_enabled, (code)->co_flags)
/* 3.15's generator expressions start with a RESUME that tracing skips. */
#  define IS_ENTRY(unit) \
    ((unit).op.code == RESUME && ((unit).op.arg & RESUME_OPARG_LOCATION_MASK) != RESUME_AT_GEN_EXPR_START)
#elif PY_VERSION_HEX >= 0x030E0000
extern void _PyCode_Quicken(_Py_CODEUNIT *instructions, Py_ssize_t size, int enable_counters);
#  define QUICKEN(interp, code) _PyCode_Quicken(_PyCode_CODE(code), Py_SIZE(code), 1)
#  define IS_ENTRY(unit) ((unit).op.code == RESUME)
#else
extern void _PyCode_Quicken(PyCodeObject *code);
#  define QUICKEN(interp, code) _PyCode_Quicken(code)
#  define IS_ENTRY(unit) ((unit).op.code == RESUME)
#endif

static int
first_traceable(PyCodeObject *code)
{
    int entry = 0;
    while (entry < Py_SIZE(code) && !IS_ENTRY(_PyCode_CODE(code)[entry])) {
        entry++;
    }
    return entry;
}

/* CPython's intern function refuses statically allocated strings (it asserts), so this
 * does what it would: a runtime-global static string wins, then one already interned in
 * this interpreter; otherwise ours is interned, marked so the interpreter never frees it. */
static PyObject *
intern_static(PyInterpreterState *interp, PyObject *s)
{
    if (PyUnicode_CHECK_INTERNED(s)) {
        return s;
    }
    PyObject *global = (PyObject *)_Py_hashtable_get(_PyRuntime.cached_objects.interned_strings, s);
    if (global != NULL) {
        return global;
    }
    PyObject *found;
    if (PyDict_SetDefaultRef(interp->cached_objects.interned_strings, s, s, &found) < 0) {
        return NULL;
    }
    if (found != s) {
        /* A heap string interned earlier: our objects never release what they point at. */
        _PyUnicode_InternImmortal(interp, &found);
        return found;
    }
    _PyASCIIObject_CAST(s)->state.interned = SSTATE_INTERNED_IMMORTAL_STATIC;
    return s;
}

/* Code watchers are told of each code object as it is made, as init_code() tells them. */
static void
notify_watchers(PyInterpreterState *interp, PyCodeObject *code)
{
    uint8_t bits = interp->active_code_watchers;
    for (int i = 0; bits != 0; i++, bits >>= 1) {
        if ((bits & 1) && interp->code_watchers[i](PY_CODE_EVENT_CREATE, code) < 0) {
            PyErr_FormatUnraisable("Exception ignored in a code watcher callback for %R", code);
        }
    }
}

/* After Py_Finalize the patched slots point at the old runtime's strings and sets; an
 * embedder that initializes again gets marshalled code from then on. */
static int finalized;
static int watching_finalization;

static void
on_finalize(void)
{
    finalized = 1;
}

static int
init_module(pyfreight_static_module *m)
{
    PyInterpreterState *interp = _PyInterpreterState_GET();
    for (int i = 0; i < m->n_strings; i++) {
        const pyfreight_patch *p = &m->strings[i];
        PyObject *chosen = intern_static(interp, p->obj);
        if (chosen == NULL) {
            return -1;
        }
        for (int j = 0; chosen != p->obj && j < p->count; j++) {
            *m->string_slots[p->first + j] = chosen;
        }
    }
    for (int i = 0; i < m->n_frozensets; i++) {
        const pyfreight_patch *p = &m->frozensets[i];
        PyObject *set = PyFrozenSet_New(p->obj);
        if (set == NULL) {
            return -1;
        }
        _Py_SetImmortal(set);
        for (int j = 0; j < p->count; j++) {
            *m->frozenset_slots[p->first + j] = set;
        }
    }
    for (int i = 0; i < m->n_codes; i++) {
        PyCodeObject *code = m->codes[i];
        code->co_version = interp->func_state.next_version;
        if (interp->func_state.next_version != 0) {
            interp->func_state.next_version++;
        }
        code->_co_firsttraceable = first_traceable(code);
        QUICKEN(interp, code);
        notify_watchers(interp, code);
    }
    m->done = 1;
    return 0;
}

/* The static code of the blob's module `index`, a new reference; NULL without an
 * exception when there is none (the caller unmarshals), NULL with one on failure. */
PyObject *
pyfreight_static_code(uint32_t index)
{
    PyInterpreterState *interp = _PyInterpreterState_GET();
    if (index >= pyfreight_static_module_count || finalized || !_Py_IsMainInterpreter(interp)) {
        return NULL;
    }
    /* -X no_debug_ranges: init_code() drops the column tables, which ours keep. */
    if (!_PyInterpreterState_GetConfig(interp)->code_debug_ranges) {
        return NULL;
    }
    if (!watching_finalization) {
        if (Py_AtExit(on_finalize) < 0) {
            return NULL; /* the table of exit functions is full: never know, never use */
        }
        watching_finalization = 1;
    }
    pyfreight_static_module *m = &pyfreight_static_modules[index];
    if (m->top == NULL || (!m->done && init_module(m) < 0)) {
        return NULL;
    }
    return Py_NewRef(m->top);
}
