/* Static code objects for the in-memory importer (embed --static-code): the layouts the
 * generated data (staticcode.py writes static_code_data.c) and its runtime
 * (static_code.c) share. CPython 3.13, 3.14 and 3.15, default (GIL) builds, 64-bit, only:
 * anything else stops at compile time rather than laying objects out wrongly. */
#ifndef PYFREIGHT_STATIC_CODE_H
#define PYFREIGHT_STATIC_CODE_H

#ifndef Py_BUILD_CORE
#  define Py_BUILD_CORE 1
#endif
#include "Python.h"
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include "internal/pycore_code.h"
#include "internal/pycore_long.h"           /* TAG_FROM_SIGN_AND_SIZE, _PyLong_SMALL_INTS */
#include "internal/pycore_global_objects.h" /* _Py_SINGLETON, _Py_ID, _Py_STR */
#include "internal/pycore_opcode_metadata.h" /* RESUME */

#if PY_VERSION_HEX < 0x030D0000 || PY_VERSION_HEX >= 0x03100000
#  error "static code objects are generated for CPython 3.13, 3.14 and 3.15 only"
#endif
#if PY_VERSION_HEX >= 0x030E0000
#  include "internal/pycore_interpframe.h"  /* FRAME_SPECIALS_SIZE */
/* 3.14 gave tuples a cached hash; -1 means not computed yet. */
#  define PYFREIGHT_TUPLE_HASH_FIELD Py_hash_t ob_hash;
#  define PYFREIGHT_TUPLE_HASH_INIT .ob_hash = -1,
#else
#  include "internal/pycore_frame.h"        /* FRAME_SPECIALS_SIZE */
#  define PYFREIGHT_TUPLE_HASH_FIELD
#  define PYFREIGHT_TUPLE_HASH_INIT
#endif
#ifdef Py_GIL_DISABLED
#  error "static code objects are not generated for free-threaded builds"
#endif
#ifdef Py_DEBUG
#  error "static code objects are not generated for debug builds"
#endif
#if PYLONG_BITS_IN_DIGIT != 30 || SIZEOF_VOID_P != 8
#  error "static code objects are generated for 64-bit builds with 30-bit long digits"
#endif

/* Variable-size layouts, each held to the real header struct below: a layout change in
 * CPython becomes a compile error, never a silently wrong object. Tuples and slices
 * carry the GC pre-header their allocator would have given them. */
#define PYFREIGHT_TUPLE_T(N) \
    struct { PyGC_Head _gc; struct { PyObject_VAR_HEAD PYFREIGHT_TUPLE_HASH_FIELD PyObject *ob_item[N]; } _o; }
#define PYFREIGHT_BYTES_T(N) struct { PyObject_VAR_HEAD Py_hash_t ob_shash; char ob_sval[N]; }
#define PYFREIGHT_LONG_T(N) \
    struct { PyObject ob_base; struct { uintptr_t lv_tag; digit ob_digit[N]; } long_value; }
#define PYFREIGHT_SLICE_T struct { PyGC_Head _gc; PySliceObject _o; }

typedef PYFREIGHT_TUPLE_T(1) pyfreight_tuple1_t;
typedef PYFREIGHT_BYTES_T(1) pyfreight_bytes1_t;
typedef PYFREIGHT_LONG_T(1) pyfreight_long1_t;
_Static_assert(offsetof(pyfreight_tuple1_t, _o) == sizeof(PyGC_Head), "tuple GC pre-header");
_Static_assert(sizeof(((pyfreight_tuple1_t *)0)->_o) == sizeof(PyTupleObject), "PyTupleObject size");
#if PY_VERSION_HEX >= 0x030E0000
_Static_assert(offsetof(pyfreight_tuple1_t, _o.ob_hash) - offsetof(pyfreight_tuple1_t, _o)
               == offsetof(PyTupleObject, ob_hash), "PyTupleObject.ob_hash");
#endif
_Static_assert(offsetof(pyfreight_tuple1_t, _o.ob_item) - offsetof(pyfreight_tuple1_t, _o)
               == offsetof(PyTupleObject, ob_item), "PyTupleObject.ob_item");
_Static_assert(offsetof(pyfreight_bytes1_t, ob_shash) == offsetof(PyBytesObject, ob_shash), "PyBytesObject");
_Static_assert(offsetof(pyfreight_bytes1_t, ob_sval) == offsetof(PyBytesObject, ob_sval), "PyBytesObject");
_Static_assert(offsetof(pyfreight_long1_t, long_value.ob_digit) == offsetof(PyLongObject, long_value.ob_digit),
               "PyLongObject");
_Static_assert(sizeof(pyfreight_long1_t) == sizeof(PyLongObject), "PyLongObject size");
_Static_assert(offsetof(PyCodeObject, co_code_adaptive) == offsetof(struct _PyCode_DEF(8), co_code_adaptive),
               "PyCodeObject layout");

/* `count` slots, from `first` in a module's slot table, that point at `obj` (a string to
 * intern, or the elements of a frozenset to build) and are patched at first use. */
typedef struct {
    PyObject *obj;
    int first;
    int count;
} pyfreight_patch;

/* One packed module's code, by its index in the blob; `top` is NULL for entries without
 * static code (namespace packages, the finder itself). */
typedef struct {
    PyObject *top;
    int done;
    int n_strings;
    const pyfreight_patch *strings;
    PyObject **const *string_slots;
    int n_frozensets;
    const pyfreight_patch *frozensets;
    PyObject **const *frozenset_slots;
    int n_codes;
    PyCodeObject *const *codes;
} pyfreight_static_module;

extern pyfreight_static_module pyfreight_static_modules[];
extern const uint32_t pyfreight_static_module_count;

#endif
