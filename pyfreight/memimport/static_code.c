/* The runtime of static code objects (embed --static-code): on a module's first import,
 * the parts of its statically laid out code objects that can only be known in this
 * process are filled in, as CPython's init_code() would for code it unmarshals:
 *   - name strings are interned (one object per name, which dict lookups rely on), reusing
 *     the runtime's own static strings and strings interned before us, and patching every
 *     slot that points at our copy when another copy won;
 *   - frozenset constants are built (their hashes depend on this process's hash seed);
 *   - each code object gets a function version and its quickened (adaptive) bytecode,
 *     which lives in writable data.
 * Only the main interpreter is served; memimport.c falls back to marshal elsewhere. */
#include "static_code.h"
#include "internal/pycore_hashtable.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_pystate.h"
#include "internal/pycore_runtime.h"
#include "internal/pycore_unicodeobject.h"

extern void _PyCode_Quicken(_Py_CODEUNIT *instructions, Py_ssize_t size, int enable_counters);

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
        _PyCode_Quicken(_PyCode_CODE(code), Py_SIZE(code), 1);
    }
    m->done = 1;
    return 0;
}

/* The static code of the blob's module `index`, a new reference; NULL without an
 * exception when there is none (the caller unmarshals), NULL with one on failure. */
PyObject *
pyfreight_static_code(uint32_t index)
{
    if (index >= pyfreight_static_module_count || !_Py_IsMainInterpreter(_PyInterpreterState_GET())) {
        return NULL;
    }
    pyfreight_static_module *m = &pyfreight_static_modules[index];
    if (m->top == NULL || (!m->done && init_module(m) < 0)) {
        return NULL;
    }
    return Py_NewRef(m->top);
}
