"""gen.py - prototype "static code objects" (deepfreeze-like) generator for CPython 3.14.

Usage: python3.14 gen.py -o out.c [--include-dir DIR] [--list FILE] mod1 mod2 ...

For each module: find its source (importlib.util.find_spec), compile(src, path, 'exec',
optimize=0, dont_inherit=True), marshal.dumps() it, re-read the marshal stream with the
small pure-Python reader below (so we get co_localsplusnames / co_localspluskinds exactly
as the C runtime sees them, independent of the running interpreter's Python-level API),
and emit C that statically defines every object as an immortal, statically allocated object.

Emitted runtime API (see df_codes.h):
    int df_init_module(int idx);          // per-module lazy init (interning, frozensets, quicken)
    int df_init_all(void);
    PyObject *df_get_code(const char *name);  // borrowed ref, inits lazily; NULL if unknown
    extern const int df_nmodules; extern const char *const df_module_names[];
"""
import argparse
import importlib.util
import marshal
import os
import re
import struct
import sys
import time

# ----------------------------------------------------------------------------
# marshal reader (format version 5, CPython 3.14)

class Code:
    pass

class FSet:
    def __init__(self, items):
        self.items = tuple(items)

class Slice:
    def __init__(self, start, stop, step):
        self.start, self.stop, self.step = start, stop, step

class _Ellipsis:
    pass

ELLIPSIS = _Ellipsis()
FLAG_REF = 0x80


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0
        self.refs = []

    def r_byte(self):
        b = self.data[self.pos]
        self.pos += 1
        return b

    def r_long(self):
        v, = struct.unpack_from('<i', self.data, self.pos)
        self.pos += 4
        return v

    def r_bytes(self, n):
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return bytes(b)

    def r_object(self):
        code = self.r_byte()
        flag = code & FLAG_REF
        t = chr(code & ~FLAG_REF)
        idx = None
        if flag:
            idx = len(self.refs)
            self.refs.append(None)

        def R(v):
            if flag:
                self.refs[idx] = v
            return v

        if t == '0':
            return None  # NULL
        if t == 'N':
            return None
        if t == 'F':
            return False
        if t == 'T':
            return True
        if t == '.':
            return ELLIPSIS
        if t == 'i':
            return R(self.r_long())
        if t == 'l':
            n = self.r_long()
            size = abs(n)
            v = 0
            for i in range(size):
                d, = struct.unpack_from('<H', self.data, self.pos)
                self.pos += 2
                v |= d << (15 * i)
            return R(-v if n < 0 else v)
        if t == 'g':
            v, = struct.unpack_from('<d', self.data, self.pos)
            self.pos += 8
            return R(v)
        if t == 'y':
            re_, im = struct.unpack_from('<dd', self.data, self.pos)
            self.pos += 16
            return R(complex(re_, im))
        if t == 's':
            n = self.r_long()
            return R(self.r_bytes(n))
        if t in 'ut':
            n = self.r_long()
            return R(self.r_bytes(n).decode('utf-8', 'surrogatepass'))
        if t in 'aA':
            n = self.r_long()
            return R(self.r_bytes(n).decode('ascii'))
        if t in 'zZ':
            n = self.r_byte()
            return R(self.r_bytes(n).decode('ascii'))
        if t in '()':
            n = self.r_byte() if t == ')' else self.r_long()
            if flag:
                # tuples are REF'd before items are read
                items = []
                self.refs[idx] = None
            items = tuple(self.r_object() for _ in range(n))
            return R(items)
        if t in '<>':
            n = self.r_long()
            if n == 0 and t == '>':
                return R(FSet(()))
            items = [self.r_object() for _ in range(n)]
            assert t == '>', 'mutable set in code constants'
            return R(FSet(items))
        if t == ':':
            start = self.r_object()
            stop = self.r_object()
            step = self.r_object()
            return R(Slice(start, stop, step))
        if t == 'r':
            n = self.r_long()
            return self.refs[n]
        if t == 'c':
            c = Code()
            if flag:
                self.refs[idx] = c
            c.argcount = self.r_long()
            c.posonlyargcount = self.r_long()
            c.kwonlyargcount = self.r_long()
            c.stacksize = self.r_long()
            c.flags = self.r_long()
            c.code = self.r_object()
            c.consts = self.r_object()
            c.names = self.r_object()
            c.localsplusnames = self.r_object()
            c.localspluskinds = self.r_object()
            c.filename = self.r_object()
            c.name = self.r_object()
            c.qualname = self.r_object()
            c.firstlineno = self.r_long()
            c.linetable = self.r_object()
            c.exceptiontable = self.r_object()
            return c
        raise ValueError(f'unsupported marshal type {t!r} at {self.pos}')


# ----------------------------------------------------------------------------
# helpers

CO_FAST_LOCAL = 0x20
CO_FAST_CELL = 0x40
CO_FAST_FREE = 0x80


def c_bytes_literal(b):
    out = ['"']
    n = 0
    for c in b:
        if 0x20 <= c < 0x7f and c not in (0x22, 0x5c, 0x3f):
            out.append(chr(c))
        else:
            out.append('\\%03o' % c)
        n += 1
        if n % 100 == 0:
            out.append('"\n"')
    out.append('"')
    return ''.join(out)


def should_intern_const(s):
    # CPython 3.14 default build: should_intern_string(): ASCII [a-zA-Z0-9_]*
    return s.isascii() and all(ch.isalnum() or ch == '_' for ch in s)


def read_header_info(include_dir):
    ids, strs = set(), {}
    with open(os.path.join(include_dir, 'internal', 'pycore_global_strings.h')) as f:
        for line in f:
            m = re.match(r'\s*STRUCT_FOR_ID\((\w+)\)', line)
            if m:
                ids.add(m.group(1))
            m = re.match(r'\s*STRUCT_FOR_STR\((\w+), "(.*?)"\)', line)
            if m:
                strs[m.group(2)] = m.group(1)
    with open(os.path.join(include_dir, 'internal', 'pycore_runtime_structs.h')) as f:
        txt = f.read()
    npos = int(re.search(r'#define _PY_NSMALLPOSINTS\s+(\d+)', txt).group(1))
    nneg = int(re.search(r'#define _PY_NSMALLNEGINTS\s+(\d+)', txt).group(1))
    return ids, strs, npos, nneg


# ----------------------------------------------------------------------------
# generator

class Gen:
    def __init__(self, include_dir):
        self.ids, self.strs, self.npos, self.nneg = read_header_info(include_dir)
        self.out = []
        self.leaf_cache = {}      # key -> (cexpr, cname or None)
        self.n = 0
        self.modules = []         # (modname, toplevel cexpr)
        self.stats = dict(str=0, bytes=0, int=0, float=0, complex=0, tuple=0,
                          frozenset=0, slice=0, code=0, shared_str=0)
        self.cur = None           # per-module state

    def w(self, s):
        self.out.append(s)

    def newname(self, prefix):
        self.n += 1
        return f'{prefix}_{self.n}'

    # --- per module state
    def begin_module(self, modname):
        self.cur = dict(
            name=modname,
            container_cache={},
            str_slots={},       # str cname -> [slot lvalue]
            intern=set(),       # str cnames that must be interned
            fsets=[],           # (elements tuple cexpr, [slot lvalues])
            fset_cache={},
            codes=[],           # code cnames in this module
        )

    # --- leaves
    def gen_str(self, s):
        key = ('s', s)
        if key in self.leaf_cache:
            return self.leaf_cache[key]
        # runtime-global statically interned strings
        if s in self.strs:
            r = (f'(PyObject *)&_Py_STR({self.strs[s]})', None)
        elif s in self.ids:
            r = (f'(PyObject *)&_Py_ID({s})', None)
        elif len(s) == 1 and ord(s) < 256:
            c = ord(s)
            r = ((f'(PyObject *)&_Py_SINGLETON(strings).ascii[{c}]' if c < 128 else
                  f'(PyObject *)&_Py_SINGLETON(strings).latin1[{c - 128}]'), None)
        else:
            name = self.newname('df_str')
            self.stats['str'] += 1
            mx = max(map(ord, s)) if s else 0
            if mx < 0x80:
                self.w(f'static struct {{ PyASCIIObject _ascii; uint8_t _data[{len(s) + 1}]; }} {name} = {{')
                self.w(f'  ._ascii = {{ PyObject_HEAD_INIT(&PyUnicode_Type) .length = {len(s)}, .hash = -1,')
                self.w(f'    .state = {{ .kind = 1, .compact = 1, .ascii = 1, .statically_allocated = 1 }} }},')
                self.w(f'  ._data = {c_bytes_literal(s.encode("ascii"))} }};')
                r = (f'(PyObject *)&{name}', name)
            else:
                if mx < 0x100:
                    kind, dt = 1, 'Py_UCS1'
                elif mx < 0x10000:
                    kind, dt = 2, 'Py_UCS2'
                else:
                    kind, dt = 4, 'Py_UCS4'
                self.w(f'static struct {{ PyCompactUnicodeObject _compact; {dt} _data[{len(s) + 1}]; }} {name} = {{')
                self.w(f'  ._compact = {{ ._base = {{ PyObject_HEAD_INIT(&PyUnicode_Type) .length = {len(s)}, .hash = -1,')
                self.w(f'    .state = {{ .kind = {kind}, .compact = 1, .ascii = 0, .statically_allocated = 1 }} }},')
                self.w(f'    .utf8_length = 0, .utf8 = NULL }},')
                chars = ', '.join(str(ord(ch)) for ch in s)
                self.w(f'  ._data = {{ {chars}, 0 }} }};')
                r = (f'(PyObject *)&{name}', name)
        self.leaf_cache[key] = r
        return r

    def gen_bytes(self, b):
        key = ('b', b)
        if key in self.leaf_cache:
            return self.leaf_cache[key][0]
        if len(b) == 0:
            r = '(PyObject *)&_Py_SINGLETON(bytes_empty)'
        elif len(b) == 1:
            r = f'(PyObject *)&_Py_SINGLETON(bytes_characters[{b[0]}])'
        else:
            name = self.newname('df_bytes')
            self.stats['bytes'] += 1
            self.w(f'static DF_BYTES_T({len(b) + 1}) {name} = {{ PyVarObject_HEAD_INIT(&PyBytes_Type, {len(b)}) '
                   f'.ob_shash = -1, .ob_sval = {c_bytes_literal(b)} }};')
            r = f'(PyObject *)&{name}'
        self.leaf_cache[key] = (r, None)
        return r

    def gen_int(self, i):
        key = ('i', i)
        if key in self.leaf_cache:
            return self.leaf_cache[key][0]
        if -self.nneg <= i < self.npos:
            r = f'(PyObject *)&_PyLong_SMALL_INTS[_PY_NSMALLNEGINTS + ({i})]'
        else:
            name = self.newname('df_int')
            self.stats['int'] += 1
            sign = 1 if i > 0 else -1
            a = abs(i)
            digits = []
            while a:
                digits.append(a & ((1 << 30) - 1))
                a >>= 30
            ds = ', '.join(f'{d}u' for d in digits)
            self.w(f'static DF_LONG_T({len(digits)}) {name} = {{ PyObject_HEAD_INIT(&PyLong_Type) '
                   f'.long_value = {{ .lv_tag = TAG_FROM_SIGN_AND_SIZE({sign}, {len(digits)}), .ob_digit = {{ {ds} }} }} }};')
            r = f'(PyObject *)&{name}'
        self.leaf_cache[key] = (r, None)
        return r

    @staticmethod
    def c_double(x):
        if x != x:
            return '(double)NAN'
        if x == float('inf'):
            return '(double)INFINITY'
        if x == float('-inf'):
            return '(-(double)INFINITY)'
        return x.hex()

    def gen_float(self, x):
        key = ('f', struct.pack('<d', x))
        if key in self.leaf_cache:
            return self.leaf_cache[key][0]
        name = self.newname('df_float')
        self.stats['float'] += 1
        self.w(f'static PyFloatObject {name} = {{ PyObject_HEAD_INIT(&PyFloat_Type) .ob_fval = {self.c_double(x)} }};')
        r = f'(PyObject *)&{name}'
        self.leaf_cache[key] = (r, None)
        return r

    def gen_complex(self, z):
        key = ('x', struct.pack('<dd', z.real, z.imag))
        if key in self.leaf_cache:
            return self.leaf_cache[key][0]
        name = self.newname('df_complex')
        self.stats['complex'] += 1
        self.w(f'static PyComplexObject {name} = {{ PyObject_HEAD_INIT(&PyComplex_Type) '
               f'.cval = {{ {self.c_double(z.real)}, {self.c_double(z.imag)} }} }};')
        r = f'(PyObject *)&{name}'
        self.leaf_cache[key] = (r, None)
        return r

    # --- object dispatch; `slot` is the C lvalue that will hold the reference,
    #     `intern` says whether CPython would intern a string in this position.
    def gen(self, obj, slot, intern):
        if obj is None:
            return 'Py_None'
        if obj is True:
            return 'Py_True'
        if obj is False:
            return 'Py_False'
        if obj is ELLIPSIS:
            return 'Py_Ellipsis'
        if isinstance(obj, str):
            expr, cname = self.gen_str(obj)
            if cname is not None:
                self.cur['str_slots'].setdefault(cname, []).append(slot)
                if intern:
                    self.cur['intern'].add(cname)
            return expr
        if isinstance(obj, bytes):
            return self.gen_bytes(obj)
        if isinstance(obj, int):
            return self.gen_int(obj)
        if isinstance(obj, float):
            return self.gen_float(obj)
        if isinstance(obj, complex):
            return self.gen_complex(obj)
        if isinstance(obj, tuple):
            return self.gen_tuple(obj, intern)
        if isinstance(obj, FSet):
            return self.gen_frozenset(obj, slot)
        if isinstance(obj, Slice):
            return self.gen_slice(obj)
        if isinstance(obj, Code):
            return self.gen_code(obj)
        raise TypeError(type(obj))

    def key(self, obj):
        if obj is None or obj is True or obj is False or obj is ELLIPSIS:
            return ('c', repr(obj))
        if isinstance(obj, str):
            return ('s', obj)
        if isinstance(obj, bytes):
            return ('b', obj)
        if isinstance(obj, int):
            return ('i', obj)
        if isinstance(obj, float):
            return ('f', struct.pack('<d', obj))
        if isinstance(obj, complex):
            return ('x', struct.pack('<dd', obj.real, obj.imag))
        if isinstance(obj, tuple):
            return ('t', tuple(self.key(x) for x in obj))
        if isinstance(obj, FSet):
            return ('F', tuple(self.key(x) for x in obj.items))
        if isinstance(obj, Slice):
            return ('S', self.key(obj.start), self.key(obj.stop), self.key(obj.step))
        return ('o', id(obj))

    def gen_tuple(self, t, intern_mode):
        if len(t) == 0:
            return '(PyObject *)&_Py_SINGLETON(tuple_empty)'
        k = (self.key(t), intern_mode)
        cc = self.cur['container_cache']
        if k in cc:
            return cc[k]
        name = self.newname('df_tuple')
        self.stats['tuple'] += 1
        items = []
        for i, x in enumerate(t):
            slot = f'{name}._o.ob_item[{i}]'
            if intern_mode == 'names':
                items.append(self.gen(x, slot, True))
            else:  # consts: intern identifier-like strings, recursively
                items.append(self.gen(x, slot, isinstance(x, str) and should_intern_const(x)))
        self.w(f'static DF_TUPLE_T({len(t)}) {name} = {{ ._o = {{ PyVarObject_HEAD_INIT(&PyTuple_Type, {len(t)}) '
               f'.ob_hash = -1, .ob_item = {{ {", ".join(items)} }} }} }};')
        r = f'(PyObject *)&{name}._o'
        cc[k] = r
        return r

    def gen_frozenset(self, fs, slot):
        k = self.key(fs)
        fc = self.cur['fset_cache']
        if k in fc:
            fc[k][1].append(slot)
            return 'NULL /* frozenset built at init */'
        self.stats['frozenset'] += 1
        elems = self.gen_tuple(fs.items, 'consts')
        ent = (elems, [slot])
        fc[k] = ent
        self.cur['fsets'].append(ent)
        return 'NULL /* frozenset built at init */'

    def gen_slice(self, s):
        k = ('S', self.key(s))
        cc = self.cur['container_cache']
        if k in cc:
            return cc[k]
        name = self.newname('df_slice')
        self.stats['slice'] += 1
        a = self.gen(s.start, f'{name}._o.start', False)
        b = self.gen(s.stop, f'{name}._o.stop', False)
        c = self.gen(s.step, f'{name}._o.step', False)
        self.w(f'static struct {{ PyGC_Head _gc; PySliceObject _o; }} {name} = {{ ._o = {{ PyObject_HEAD_INIT(&PySlice_Type) '
               f'.start = {a}, .stop = {b}, .step = {c} }} }};')
        r = f'(PyObject *)&{name}._o'
        cc[k] = r
        return r

    def gen_code(self, co):
        name = self.newname('df_code')
        self.stats['code'] += 1
        consts = self.gen_tuple(co.consts, 'consts')
        names = self.gen_tuple(co.names, 'names')
        lpnames = self.gen_tuple(co.localsplusnames, 'names')
        lpkinds = self.gen_bytes(co.localspluskinds)
        filename = self.gen(co.filename, f'{name}.co_filename', True)
        cname = self.gen(co.name, f'{name}.co_name', True)
        qualname = self.gen(co.qualname, f'{name}.co_qualname', True)
        linetable = self.gen_bytes(co.linetable)
        exctable = self.gen_bytes(co.exceptiontable)
        nlocals = ncells = nfrees = 0
        for kind in co.localspluskinds:
            if kind & CO_FAST_LOCAL:
                nlocals += 1
                if kind & CO_FAST_CELL:
                    ncells += 1
            elif kind & CO_FAST_CELL:
                ncells += 1
            elif kind & CO_FAST_FREE:
                nfrees += 1
        stacksize = co.stacksize or 1
        nlp = len(co.localsplusnames)
        code = co.code
        assert len(code) % 2 == 0
        # RESUME opcode number is checked at C compile time (DF_RESUME must equal RESUME)
        first = 0
        while first < len(code) // 2 and code[2 * first] != RESUME_OPCODE:
            first += 1
        self.w(f'static struct _PyCode_DEF({len(code)}) {name} = {{')
        self.w(f'  PyVarObject_HEAD_INIT(&PyCode_Type, {len(code) // 2})')
        self.w(f'  .co_consts = {consts}, .co_names = {names}, .co_exceptiontable = {exctable},')
        self.w(f'  .co_flags = {co.flags}, .co_argcount = {co.argcount}, .co_posonlyargcount = {co.posonlyargcount},')
        self.w(f'  .co_kwonlyargcount = {co.kwonlyargcount}, .co_stacksize = {stacksize}, .co_firstlineno = {co.firstlineno},')
        self.w(f'  .co_nlocalsplus = {nlp}, .co_framesize = {nlp} + {stacksize} + FRAME_SPECIALS_SIZE,')
        self.w(f'  .co_nlocals = {nlocals}, .co_ncellvars = {ncells}, .co_nfreevars = {nfrees}, .co_version = 0,')
        self.w(f'  .co_localsplusnames = {lpnames}, .co_localspluskinds = {lpkinds},')
        self.w(f'  .co_filename = {filename}, .co_name = {cname}, .co_qualname = {qualname}, .co_linetable = {linetable},')
        self.w(f'  .co_weakreflist = NULL, .co_executors = NULL, ._co_cached = NULL, ._co_instrumentation_version = 0,')
        self.w(f'  ._co_monitoring = NULL, ._co_unique_id = 0, ._co_firsttraceable = {first}, .co_extra = NULL,')
        self.w(f'  .co_code_adaptive = {c_bytes_literal(code)} }};')
        self.cur['codes'].append(name)
        return f'(PyObject *)&{name}'

    def end_module(self, idx, top):
        m = self.cur
        # slot table for strings: for each string needing interning, the list of slots
        slots = []
        strs = []
        for cname, sl in m['str_slots'].items():
            if cname not in m['intern']:
                continue
            strs.append((cname, len(slots), len(sl)))
            slots.extend(sl)
        fslots = []
        fsets = []
        for elems, sl in m['fsets']:
            fsets.append((elems, len(fslots), len(sl)))
            fslots.extend(sl)
        p = f'df_m{idx}'
        if slots:
            self.w(f'static PyObject **const {p}_islots[] = {{ ' + ', '.join(f'&{s}' for s in slots) + ' };')
            self.w(f'static const df_intern_ent {p}_istrs[] = {{ ' +
                   ', '.join(f'{{ (PyObject *)&{c}, {a}, {n} }}' for c, a, n in strs) + ' };')
        if fslots:
            self.w(f'static PyObject **const {p}_fslots[] = {{ ' + ', '.join(f'&{s}' for s in fslots) + ' };')
            self.w(f'static const df_intern_ent {p}_fsets[] = {{ ' +
                   ', '.join(f'{{ {e}, {a}, {n} }}' for e, a, n in fsets) + ' };')
        self.w(f'static PyCodeObject *const {p}_codes[] = {{ ' +
               ', '.join(f'(PyCodeObject *)&{c}' for c in m['codes']) + ' };')
        self.modules.append(dict(
            name=m['name'], top=top, p=p,
            nistr=len(strs), nfset=len(fsets), ncode=len(m['codes']),
            islots=bool(slots), fslots=bool(fslots)))


RESUME_OPCODE = None

PRELUDE = r'''/* Generated by gen.py -- static (deep-frozen) code objects for CPython 3.14, default (GIL) build. */
#ifndef Py_BUILD_CORE
#  define Py_BUILD_CORE 1
#endif
#include "Python.h"
#include <math.h>
#include <stddef.h>
#include "internal/pycore_code.h"
#include "internal/pycore_interpframe.h"   /* FRAME_SPECIALS_SIZE */
#include "internal/pycore_long.h"          /* TAG_FROM_SIGN_AND_SIZE, _PyLong_SMALL_INTS */
#include "internal/pycore_global_objects.h" /* _Py_SINGLETON, _Py_ID, _Py_STR */
#include "internal/pycore_runtime.h"
#include "internal/pycore_interp.h"
#include "internal/pycore_pystate.h"
#include "internal/pycore_hashtable.h"
#include "internal/pycore_unicodeobject.h" /* _PyUnicode_InternImmortal */
#include "internal/pycore_opcode_metadata.h" /* RESUME */

#if PY_VERSION_HEX < 0x030E0000 || PY_VERSION_HEX >= 0x030F0000
#  error "generated for CPython 3.14 only"
#endif
#ifdef Py_GIL_DISABLED
#  error "free-threaded build not supported by this prototype"
#endif
#if PYLONG_BITS_IN_DIGIT != 30
#  error "generated for 30-bit digits"
#endif
#if SIZEOF_VOID_P != 8
#  error "generated for 64-bit"
#endif
_Static_assert(RESUME == DF_RESUME_OPCODE, "RESUME opcode number changed");

/* Variable-size layouts. Each one is checked against the real header struct below,
   so a layout change in CPython becomes a compile error instead of silent corruption. */
#define DF_TUPLE_T(N) struct { PyGC_Head _gc; struct { PyObject_VAR_HEAD Py_hash_t ob_hash; PyObject *ob_item[N]; } _o; }
#define DF_BYTES_T(N) struct { PyObject_VAR_HEAD Py_hash_t ob_shash; char ob_sval[N]; }
#define DF_LONG_T(N) struct { PyObject ob_base; struct { uintptr_t lv_tag; digit ob_digit[N]; } long_value; }
typedef DF_TUPLE_T(1) df_tuple1_t;
typedef DF_BYTES_T(1) df_bytes1_t;
typedef DF_LONG_T(1) df_long1_t;
#define DF_SAME(T, U, f) _Static_assert(offsetof(T, f) == offsetof(U, f), #T "." #f " layout mismatch")
_Static_assert(offsetof(df_tuple1_t, _o) == sizeof(PyGC_Head), "tuple GC pre-header");
_Static_assert(sizeof(((df_tuple1_t *)0)->_o) == sizeof(PyTupleObject), "PyTupleObject size");
_Static_assert(offsetof(df_tuple1_t, _o.ob_hash) - offsetof(df_tuple1_t, _o) == offsetof(PyTupleObject, ob_hash), "tuple ob_hash");
_Static_assert(offsetof(df_tuple1_t, _o.ob_item) - offsetof(df_tuple1_t, _o) == offsetof(PyTupleObject, ob_item), "tuple ob_item");
DF_SAME(df_bytes1_t, PyBytesObject, ob_shash);
DF_SAME(df_bytes1_t, PyBytesObject, ob_sval);
DF_SAME(df_long1_t, PyLongObject, long_value.lv_tag);
DF_SAME(df_long1_t, PyLongObject, long_value.ob_digit);
_Static_assert(sizeof(df_long1_t) == sizeof(PyLongObject), "PyLongObject size");
_Static_assert(offsetof(PyCodeObject, co_code_adaptive) == offsetof(struct _PyCode_DEF(8), co_code_adaptive), "code layout");

typedef struct { PyObject *obj; int first; int count; } df_intern_ent;
extern void _PyCode_Quicken(_Py_CODEUNIT *instructions, Py_ssize_t size, int enable_counters);
'''

EPILOGUE = r'''
typedef struct {
    const char *name;
    PyObject *top;
    int done;
    int nistr; const df_intern_ent *istrs; PyObject **const *islots;
    int nfset; const df_intern_ent *fsets; PyObject **const *fslots;
    int ncode; PyCodeObject *const *codes;
} df_module;

static df_module df_modules[] = {
%(table)s
};
const int df_nmodules = %(n)d;

/* Intern a statically allocated string.  CPython's own intern_common() asserts that
   statically allocated strings are never passed to it, so we do the equivalent by hand:
   (1) runtime-global static strings (_Py_ID etc.) win, (2) an already interned string in
   the interpreter's interned dict wins, (3) otherwise insert our static string and mark it
   SSTATE_INTERNED_IMMORTAL_STATIC, so _PyUnicode_ClearInterned() never tries to free it. */
static PyObject *
df_intern(PyInterpreterState *interp, PyObject *s)
{
    if (PyUnicode_CHECK_INTERNED(s)) {
        return s;
    }
    PyObject *r = (PyObject *)_Py_hashtable_get(_PyRuntime.cached_objects.interned_strings, s);
    if (r != NULL) {
        return r;
    }
    PyObject *interned = interp->cached_objects.interned_strings;
    PyObject *t;
    int res = PyDict_SetDefaultRef(interned, s, s, &t);
    if (res < 0) {
        return NULL;
    }
    if (t != s) {
        /* Existing (heap) interned string: make it immortal, like intern_strings() does
           for co_names, since static objects never release their references. */
        _PyUnicode_InternImmortal(interp, &t);
        return t;
    }
    _PyASCIIObject_CAST(s)->state.interned = SSTATE_INTERNED_IMMORTAL_STATIC;
    return s;
}

#ifdef DF_PROFILE
#include <time.h>
long long df_prof_ns[3];
static long long df_now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1000000000LL + ts.tv_nsec; }
#  define DF_T(i) do { long long _t = df_now(); df_prof_ns[i] += _t - _tp; _tp = _t; } while (0)
#else
#  define DF_T(i) ((void)0)
#endif

int
df_init_module(int idx)
{
    df_module *m = &df_modules[idx];
    if (m->done) {
        return 0;
    }
#ifdef DF_PROFILE
    long long _tp = df_now();
#endif
    PyInterpreterState *interp = _PyInterpreterState_GET();
    for (int i = 0; i < m->nistr; i++) {
        const df_intern_ent *e = &m->istrs[i];
        PyObject *c = df_intern(interp, e->obj);
        if (c == NULL) {
            return -1;
        }
        if (c != e->obj) {
            for (int j = 0; j < e->count; j++) {
                *m->islots[e->first + j] = c;
            }
        }
    }
    DF_T(0);
    for (int i = 0; i < m->nfset; i++) {
        const df_intern_ent *e = &m->fsets[i];
        PyObject *fs = PyFrozenSet_New(e->obj);
        if (fs == NULL) {
            return -1;
        }
        _Py_SetImmortal(fs);
        for (int j = 0; j < e->count; j++) {
            *m->fslots[e->first + j] = fs;
        }
    }
    DF_T(1);
    for (int i = 0; i < m->ncode; i++) {
        /* what init_code() does for the fields that cannot be static */
        PyCodeObject *co = m->codes[i];
        co->co_version = interp->func_state.next_version;
        if (interp->func_state.next_version != 0) {
            interp->func_state.next_version++;
        }
        _PyCode_Quicken(_PyCode_CODE(co), Py_SIZE(co), 1);
    }
    DF_T(2);
    m->done = 1;
    return 0;
}

int
df_init_all(void)
{
    for (int i = 0; i < df_nmodules; i++) {
        if (df_init_module(i) < 0) {
            return -1;
        }
    }
    return 0;
}

const char *
df_module_name(int i)
{
    return (i >= 0 && i < df_nmodules) ? df_modules[i].name : NULL;
}

int
df_find(const char *name)
{
    for (int i = 0; i < df_nmodules; i++) {
        if (strcmp(df_modules[i].name, name) == 0) {
            return i;
        }
    }
    return -1;
}

/* borrowed reference; NULL (no exception) if unknown, NULL + exception on init failure */
PyObject *
df_get_code(const char *name)
{
    int i = df_find(name);
    if (i < 0) {
        return NULL;
    }
    if (df_init_module(i) < 0) {
        return NULL;
    }
    return df_modules[i].top;
}
'''


def find_source(modname):
    """Locate a module's .py source along sys.path WITHOUT importing anything
    (importlib.util.find_spec would import parent packages)."""
    parts = modname.split('.')
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        base = os.path.join(entry, *parts)
        if os.path.isfile(os.path.join(base, '__init__.py')):
            return os.path.join(base, '__init__.py'), True
        if os.path.isfile(base + '.py'):
            return base + '.py', False
    return None, None


def main():
    global RESUME_OPCODE
    ap = argparse.ArgumentParser()
    ap.add_argument('-o', '--output', required=True)
    ap.add_argument('--include-dir', default=None)
    ap.add_argument('--list', help='file with module names, one per line')
    ap.add_argument('--manifest', help='write "name path is_pkg marshal_len" lines here')
    ap.add_argument('--marshal-out', help='write concatenated marshal blobs (for measurement)')
    ap.add_argument('modules', nargs='*')
    a = ap.parse_args()
    import opcode
    RESUME_OPCODE = opcode.opmap['RESUME']
    inc = a.include_dir or os.path.join(sys.base_prefix, 'include', f'python{sys.version_info[0]}.{sys.version_info[1]}')
    mods = list(a.modules)
    if a.list:
        with open(a.list) as f:
            mods += [l.strip() for l in f if l.strip() and not l.startswith('#')]
    g = Gen(inc)
    manifest = []
    blobs = []
    t0 = time.perf_counter()
    skipped = []
    for idx_mod, mod in enumerate(mods):
        path, is_pkg = find_source(mod)
        if path is None:
            skipped.append((mod, 'no .py source'))
            continue
        try:
            with open(path, 'rb') as f:
                src = f.read()
            co = compile(src, path, 'exec', optimize=0, dont_inherit=True)
        except Exception as e:  # SyntaxError in test data etc.
            skipped.append((mod, repr(e)))
            continue
        data = marshal.dumps(co)
        tree = Reader(data).r_object()
        idx = len(g.modules)
        g.begin_module(mod)
        top = g.gen_code(tree)
        g.end_module(idx, top)
        manifest.append((mod, path, int(bool(is_pkg)), len(data)))
        blobs.append(data)
    rows = []
    for m in g.modules:
        p = m['p']
        rows.append('    { "%s", %s, 0, %d, %s, %s, %d, %s, %s, %d, %s_codes },' % (
            m['name'], m['top'], m['nistr'],
            f'{p}_istrs' if m['islots'] else 'NULL', f'{p}_islots' if m['islots'] else 'NULL',
            m['nfset'], f'{p}_fsets' if m['fslots'] else 'NULL', f'{p}_fslots' if m['fslots'] else 'NULL',
            m['ncode'], p))
    with open(a.output, 'w') as f:
        f.write(PRELUDE.replace('DF_RESUME_OPCODE', str(RESUME_OPCODE)))
        f.write('\n'.join(g.out))
        f.write(EPILOGUE % dict(table='\n'.join(rows), n=len(rows)))
    if a.manifest:
        with open(a.manifest, 'w') as f:
            for r in manifest:
                f.write('%s %s %d %d\n' % r)
    if a.marshal_out:
        with open(a.marshal_out, 'wb') as f:
            for b in blobs:
                f.write(struct.pack('<I', len(b)))
                f.write(b)
    print(f'gen.py: {len(g.modules)} modules, {sum(r[3] for r in manifest)} marshal bytes, '
          f'{time.perf_counter() - t0:.2f}s, objects: {g.stats}', file=sys.stderr)
    for m, why in skipped:
        print(f'  skipped {m}: {why}', file=sys.stderr)


if __name__ == '__main__':
    main()
