"""Write the packed modules' code objects as C data: static code objects (embed --static-code).

Run with the *target* interpreter (CPython 3.13, 3.14 or 3.15, default build), after
pack.py::

    install/bin/python3 -I pyfreight/memimport/staticcode.py --blob stdlib.blob \
        --include-dir install/include/python3.X --out static_code_data.c

Each module's marshal data in the blob is read back with the small reader below (so the
objects are exactly what the marshal path would load, local-variable kinds included) and
written as statically allocated, immortal objects laid out with the version's own header
macros. What only the running process can know (interned names, frozenset hashes,
function versions, entry points, quickened bytecode) is done at first import by
static_code.c. Strings keep hash -1: the hash seed is chosen at run time. A module holding
a constant with no static form keeps its marshal data. docs/memory-importer.md describes it.
"""

from __future__ import annotations

import argparse
import os
import re
import struct
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

if __package__:
    from . import blobformat as bf
else:
    # Run as a script (possibly with -I, which leaves the script directory off sys.path).
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import blobformat as bf  # type: ignore[import-not-found, no-redef]  # the same module as above

MARSHAL_REF = 0x80
CO_FAST_LOCAL, CO_FAST_CELL, CO_FAST_FREE = 0x20, 0x40, 0x80
ELLIPSIS = Ellipsis


class NoStaticForm(Exception):
    """A module holds an object this generator does not lay out; it keeps its marshal data."""


@dataclass(eq=False)
class Code:
    """A code object as marshal stores it (the field order of 3.13 to 3.15)."""

    argcount: int = 0
    posonlyargcount: int = 0
    kwonlyargcount: int = 0
    stacksize: int = 0
    flags: int = 0
    code: bytes = b""
    consts: tuple = ()
    names: tuple = ()
    localsplusnames: tuple = ()
    localspluskinds: bytes = b""
    filename: str = ""
    name: str = ""
    qualname: str = ""
    firstlineno: int = 0
    linetable: bytes = b""
    exceptiontable: bytes = b""


@dataclass(frozen=True)
class FrozenSet:
    items: tuple


@dataclass(frozen=True)
class Slice:
    start: object
    stop: object
    step: object


class MarshalReader:
    """Marshal formats 4 to 6 (CPython 3.13 to 3.15), for the object types compile() produces."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos, self.refs = data, 0, []  # type: tuple[bytes, int, list[object]]

    def _take(self, size: int) -> bytes:
        chunk = self.data[self.pos : self.pos + size]
        self.pos += size
        return bytes(chunk)

    def _int32(self) -> int:
        value: int = struct.unpack("<i", self._take(4))[0]
        return value

    def read(self) -> object:
        kind = self._take(1)[0]
        remember = bool(kind & MARSHAL_REF)
        tag = chr(kind & ~MARSHAL_REF)
        slot = len(self.refs)
        if remember:
            self.refs.append(None)
        if tag == "c":
            code = Code()
            if remember:
                self.refs[slot] = code  # nested code may refer back to it
            self._code_fields(code)
            return code
        value = self._value(tag)
        if remember:
            self.refs[slot] = value
        return value

    def _value(self, tag: str) -> object:
        simple = {"0": None, "N": None, "F": False, "T": True, ".": ELLIPSIS}
        if tag in simple:
            return simple[tag]
        if tag == "i":
            return self._int32()
        if tag == "l":
            size = self._int32()
            digits = struct.unpack(f"<{abs(size)}H", self._take(2 * abs(size)))
            value = sum(d << (15 * i) for i, d in enumerate(digits))
            return -value if size < 0 else value
        if tag == "g":
            return struct.unpack("<d", self._take(8))[0]
        if tag == "y":
            real, imag = struct.unpack("<dd", self._take(16))
            return complex(real, imag)
        if tag == "s":
            return self._take(self._int32())
        if tag in "ut":
            return self._take(self._int32()).decode("utf-8", "surrogatepass")
        if tag in "aA":
            return self._take(self._int32()).decode("ascii")
        if tag in "zZ":
            return self._take(self._take(1)[0]).decode("ascii")
        if tag in "()":
            size = self._take(1)[0] if tag == ")" else self._int32()
            return tuple(self.read() for _ in range(size))
        if tag == ">":
            return FrozenSet(tuple(self.read() for _ in range(self._int32())))
        if tag == ":":
            return Slice(self.read(), self.read(), self.read())
        if tag == "r":
            return self.refs[self._int32()]
        # 3.15's frozendict ('}') included: compile() does not make them today.
        raise NoStaticForm(f"marshal type {tag!r} at offset {self.pos}")

    def _code_fields(self, code: Code) -> None:
        code.argcount, code.posonlyargcount, code.kwonlyargcount = self._int32(), self._int32(), self._int32()
        code.stacksize, code.flags = self._int32(), self._int32()
        code.code, code.consts, code.names = self.read(), self.read(), self.read()  # type: ignore[assignment]
        code.localsplusnames, code.localspluskinds = self.read(), self.read()  # type: ignore[assignment]
        code.filename, code.name, code.qualname = self.read(), self.read(), self.read()  # type: ignore[assignment]
        code.firstlineno = self._int32()
        code.linetable, code.exceptiontable = self.read(), self.read()  # type: ignore[assignment]


def c_bytes(data: bytes) -> str:
    """A C string literal of `data` (octal escapes; lines of 100 bytes)."""
    out = ['"']
    for i, byte in enumerate(data):
        plain = 0x20 <= byte < 0x7F and byte not in b'"\\?'
        out.append(chr(byte) if plain else f"\\{byte:03o}")
        if i % 100 == 99:
            out.append('"\n"')
    out.append('"')
    return "".join(out)


def c_double(value: float) -> str:
    if value != value:
        return "(double)NAN"
    if value in (float("inf"), float("-inf")):
        return f"({'-' if value < 0 else ''}(double)INFINITY)"
    return value.hex()


def interned_like_a_name(text: str) -> bool:
    """CPython (3.13 to 3.15) interns string constants made of ASCII letters, digits and _."""
    return text.isascii() and all(ch.isalnum() or ch == "_" for ch in text)


@dataclass(frozen=True)
class RuntimeObjects:
    """What the runtime already holds statically: its own strings and small ints."""

    identifiers: frozenset[str]
    strings: dict[str, str]  # text -> _Py_STR name
    small_ints: range

    @classmethod
    def read(cls, include_dir: Path) -> RuntimeObjects:
        internal = include_dir / "internal"
        strings_h = (internal / "pycore_global_strings.h").read_text()
        identifiers = frozenset(re.findall(r"^\s*STRUCT_FOR_ID\((\w+)\)", strings_h, re.M))
        strings = {
            text: name for name, text in re.findall(r'^\s*STRUCT_FOR_STR\((\w+), "(.*?)"\)', strings_h, re.M)
        }
        # The small-int cache's bounds (3.13 keeps them in another header than 3.14+).
        structs = "".join(
            (internal / header).read_text()
            for header in ("pycore_runtime_structs.h", "pycore_global_objects.h")
            if (internal / header).exists()
        )
        positive = int(re.search(r"#define _PY_NSMALLPOSINTS\s+(\d+)", structs).group(1))  # type: ignore[union-attr]
        negative = int(re.search(r"#define _PY_NSMALLNEGINTS\s+(\d+)", structs).group(1))  # type: ignore[union-attr]
        return cls(identifiers, strings, range(-negative, positive))


@dataclass
class ModuleState:
    strings: dict[str, list[str]] = field(default_factory=dict)  # C name -> slots pointing at it
    to_intern: set[str] = field(default_factory=set)
    frozensets: list[tuple[str, list[str]]] = field(default_factory=list)  # elements tuple, slots
    frozenset_of: dict[object, tuple[str, list[str]]] = field(default_factory=dict)
    containers: dict[object, str] = field(default_factory=dict)
    codes: list[str] = field(default_factory=list)


class Writer:
    """Writes each object once (leaves are shared across modules; containers within one)."""

    def __init__(self, runtime: RuntimeObjects) -> None:
        self.runtime = runtime
        self.lines: list[str] = []
        self.leaves: dict[object, tuple[str, str | None]] = {}  # key -> (C expression, C name)
        self.count = 0
        self.module = ModuleState()

    def name(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def string(self, text: str) -> tuple[str, str | None]:
        key = ("s", text)
        if key in self.leaves:
            return self.leaves[key]
        if text in self.runtime.strings:
            found: tuple[str, str | None] = (f"(PyObject *)&_Py_STR({self.runtime.strings[text]})", None)
        elif text in self.runtime.identifiers:
            found = (f"(PyObject *)&_Py_ID({text})", None)
        elif len(text) == 1 and ord(text) < 256:
            table = f"ascii[{ord(text)}]" if ord(text) < 128 else f"latin1[{ord(text) - 128}]"
            found = (f"(PyObject *)&_Py_SINGLETON(strings).{table}", None)
        else:
            name = self.name("s")
            widest = max(map(ord, text), default=0)
            state = ".compact = 1, .statically_allocated = 1"
            head = f"PyObject_HEAD_INIT(&PyUnicode_Type) .length = {len(text)}, .hash = -1"
            if widest < 0x80:
                self.lines.append(
                    f"static struct {{ PyASCIIObject a; uint8_t d[{len(text) + 1}]; }} "
                    f"{name} = {{ .a = {{ {head}, "
                    f".state = {{ .kind = 1, .ascii = 1, {state} }} "
                    f"}}, .d = {c_bytes(text.encode('ascii'))} }};"
                )
            else:
                kind, unit = (
                    (1, "Py_UCS1")
                    if widest < 0x100
                    else (2, "Py_UCS2")
                    if widest < 0x10000
                    else (4, "Py_UCS4")
                )
                units = ", ".join(str(ord(ch)) for ch in text)
                self.lines.append(
                    f"static struct {{ PyCompactUnicodeObject c; {unit} d[{len(text) + 1}]; }} "
                    f"{name} = {{ .c = {{ "
                    f"._base = {{ {head}, .state = {{ .kind = {kind}, .ascii = 0, {state} }} }}, "
                    f".utf8_length = 0, .utf8 = NULL }}, .d = {{ {units}, 0 }} }};"
                )
            found = (f"(PyObject *)&{name}", name)
        self.leaves[key] = found
        return found

    def leaf(self, key: tuple, make: str, declaration: str) -> str:
        """A non-string leaf: `declaration` (with {name}) written once per `key`."""
        if key not in self.leaves:
            name = self.name(make)
            self.lines.append(declaration.replace("{name}", name))
            self.leaves[key] = (f"(PyObject *)&{name}", name)
        return self.leaves[key][0]

    def bytes_(self, data: bytes) -> str:
        if not data:
            return "(PyObject *)&_Py_SINGLETON(bytes_empty)"
        if len(data) == 1:
            return f"(PyObject *)&_Py_SINGLETON(bytes_characters[{data[0]}])"
        return self.leaf(
            ("b", data),
            "b",
            f"static PYFREIGHT_BYTES_T({len(data) + 1}) {{name}} = {{ PyVarObject_HEAD_INIT(&PyBytes_Type, "
            f"{len(data)}) .ob_shash = -1, .ob_sval = {c_bytes(data)} }};",
        )

    def integer(self, value: int) -> str:
        if value in self.runtime.small_ints:
            return f"(PyObject *)&_PyLong_SMALL_INTS[_PY_NSMALLNEGINTS + ({value})]"
        digits, rest = [], abs(value)
        while rest:
            digits.append(rest & ((1 << 30) - 1))
            rest >>= 30
        listed = ", ".join(f"{d}u" for d in digits)
        sign = 1 if value > 0 else -1
        return self.leaf(
            ("i", value),
            "i",
            f"static PYFREIGHT_LONG_T({len(digits)}) {{name}} = "
            f"{{ PyObject_HEAD_INIT(&PyLong_Type) .long_value = "
            f"{{ .lv_tag = TAG_FROM_SIGN_AND_SIZE({sign}, {len(digits)}), .ob_digit = {{ {listed} }} }} }};",
        )

    def value_of(self, value: object, slot: str, intern: bool) -> str:
        """The C expression for `value`, stored in the C lvalue `slot`; `intern` says
        whether CPython interns a string in that position."""
        if value is None or isinstance(value, bool) or value is ELLIPSIS:
            return {None: "Py_None", True: "Py_True", False: "Py_False"}.get(value, "Py_Ellipsis")  # type: ignore[arg-type]
        if isinstance(value, str):
            expression, name = self.string(value)
            if name is not None:
                self.module.strings.setdefault(name, []).append(slot)
                if intern:
                    self.module.to_intern.add(name)
            return expression
        if isinstance(value, bytes):
            return self.bytes_(value)
        if isinstance(value, int):
            return self.integer(value)
        if isinstance(value, float):
            return self.leaf(
                ("f", struct.pack("<d", value)),
                "f",
                f"static PyFloatObject {{name}} = "
                f"{{ PyObject_HEAD_INIT(&PyFloat_Type) .ob_fval = {c_double(value)} }};",
            )
        if isinstance(value, complex):
            parts = f"{c_double(value.real)}, {c_double(value.imag)}"
            return self.leaf(
                ("x", struct.pack("<dd", value.real, value.imag)),
                "x",
                f"static PyComplexObject {{name}} = "
                f"{{ PyObject_HEAD_INIT(&PyComplex_Type) .cval = {{ {parts} }} }};",
            )
        if isinstance(value, tuple):
            return self.tuple_(value, names=False)
        if isinstance(value, FrozenSet):
            return self.frozenset_(value, slot)
        if isinstance(value, Slice):
            return self.slice_(value)
        if isinstance(value, Code):
            return self.code(value)
        raise TypeError(f"no static form for {type(value).__name__}")

    def key(self, value: object) -> object:
        """Identity for sharing: equal values of the same type (1 and 1.0 and True differ)."""
        if isinstance(value, tuple):
            return ("t", tuple(self.key(v) for v in value))
        if isinstance(value, FrozenSet):
            return ("F", tuple(self.key(v) for v in value.items))
        if isinstance(value, Slice):
            return ("S", self.key(value.start), self.key(value.stop), self.key(value.step))
        if isinstance(value, float):
            return ("f", struct.pack("<d", value))
        if isinstance(value, complex):
            return ("x", struct.pack("<dd", value.real, value.imag))
        if isinstance(value, Code):
            return ("c", id(value))
        return (type(value).__name__, value)

    def tuple_(self, items: tuple, names: bool) -> str:
        if not items:
            return "(PyObject *)&_Py_SINGLETON(tuple_empty)"
        key = (self.key(items), names)
        if key in self.module.containers:
            return self.module.containers[key]
        name = self.name("t")
        elements = [
            self.value_of(
                v, f"{name}._o.ob_item[{i}]", names or (isinstance(v, str) and interned_like_a_name(v))
            )
            for i, v in enumerate(items)
        ]
        self.lines.append(
            f"static PYFREIGHT_TUPLE_T({len(items)}) {name} = "
            f"{{ ._o = {{ PyVarObject_HEAD_INIT(&PyTuple_Type, "
            f"{len(items)}) PYFREIGHT_TUPLE_HASH_INIT .ob_item = {{ {', '.join(elements)} }} }} }};"
        )
        self.module.containers[key] = f"(PyObject *)&{name}._o"
        return self.module.containers[key]

    def frozenset_(self, value: FrozenSet, slot: str) -> str:
        key = self.key(value)
        if key not in self.module.frozenset_of:
            entry: tuple[str, list[str]] = (self.tuple_(value.items, names=False), [])
            self.module.frozenset_of[key] = entry
            self.module.frozensets.append(entry)
        self.module.frozenset_of[key][1].append(slot)
        return "NULL /* a frozenset, built at first use */"

    def slice_(self, value: Slice) -> str:
        key = self.key(value)
        if key in self.module.containers:
            return self.module.containers[key]
        name = self.name("l")
        bounds = [
            self.value_of(getattr(value, f), f"{name}._o.{f}", False) for f in ("start", "stop", "step")
        ]
        self.lines.append(
            f"static PYFREIGHT_SLICE_T {name} = {{ ._o = {{ PyObject_HEAD_INIT(&PySlice_Type) "
            f".start = {bounds[0]}, .stop = {bounds[1]}, .step = {bounds[2]} }} }};"
        )
        self.module.containers[key] = f"(PyObject *)&{name}._o"
        return self.module.containers[key]

    def code(self, co: Code) -> str:
        name = self.name("c")
        consts, names = self.tuple_(co.consts, names=False), self.tuple_(co.names, names=True)
        local_names, local_kinds = (
            self.tuple_(co.localsplusnames, names=True),
            self.bytes_(co.localspluskinds),
        )
        texts = {
            f: self.value_of(getattr(co, f), f"{name}.co_{f}", True) for f in ("filename", "name", "qualname")
        }
        kinds = co.localspluskinds
        n_locals = sum(1 for k in kinds if k & CO_FAST_LOCAL)
        n_cells = sum(1 for k in kinds if k & CO_FAST_CELL)
        n_free = sum(1 for k in kinds if not k & CO_FAST_LOCAL and not k & CO_FAST_CELL and k & CO_FAST_FREE)
        stack = co.stacksize or 1
        self.lines += [
            f"static struct _PyCode_DEF({len(co.code)}) {name} = "
            f"{{ PyVarObject_HEAD_INIT(&PyCode_Type, {len(co.code) // 2})",
            f"  .co_consts = {consts}, .co_names = {names}, "
            f".co_exceptiontable = {self.bytes_(co.exceptiontable)},",
            f"  .co_flags = {co.flags}, .co_argcount = {co.argcount}, "
            f".co_posonlyargcount = {co.posonlyargcount},",
            f"  .co_kwonlyargcount = {co.kwonlyargcount}, .co_stacksize "
            f"= {stack}, .co_firstlineno = {co.firstlineno},",
            f"  .co_nlocalsplus = {len(kinds)}, .co_framesize "
            f"= {len(kinds)} + {stack} + FRAME_SPECIALS_SIZE,",
            f"  .co_nlocals = {n_locals}, .co_ncellvars = "
            f"{n_cells}, .co_nfreevars = {n_free}, .co_version = 0,",
            f"  .co_localsplusnames = {local_names}, .co_localspluskinds = {local_kinds},",
            f"  .co_filename = {texts['filename']}, .co_name = "
            f"{texts['name']}, .co_qualname = {texts['qualname']},",
            f"  .co_linetable = {self.bytes_(co.linetable)},",
            f"  .co_code_adaptive = {c_bytes(co.code)} }};",
        ]
        self.module.codes.append(name)
        return f"(PyObject *)&{name}"

    def finish_module(self, index: int, top: str) -> str:
        """Writes the module's patch tables; returns its row of the module table."""
        state, prefix = self.module, f"m{index}_"
        strings: list[str] = []
        string_slots: list[str] = []
        for name, slots in state.strings.items():
            if name in state.to_intern:
                strings.append(f"{{ (PyObject *)&{name}, {len(string_slots)}, {len(slots)} }}")
                string_slots += slots
        sets: list[str] = []
        set_slots: list[str] = []
        for elements, slots in state.frozensets:
            sets.append(f"{{ {elements}, {len(set_slots)}, {len(slots)} }}")
            set_slots += slots
        tables = {}
        for table, kind, entries in (
            ("strings", "const pyfreight_patch", strings),
            ("string_slots", "PyObject **const", [f"&{s}" for s in string_slots]),
            ("frozensets", "const pyfreight_patch", sets),
            ("frozenset_slots", "PyObject **const", [f"&{s}" for s in set_slots]),
            ("codes", "PyCodeObject *const", [f"(PyCodeObject *)&{c}" for c in state.codes]),
        ):
            tables[table] = f"{prefix}{table}" if entries else "NULL"
            if entries:
                self.lines.append(f"static {kind} {prefix}{table}[] = {{ {', '.join(entries)} }};")
        self.module = ModuleState()
        return (
            f"    {{ {top}, 0, {len(strings)}, {tables['strings']}, {tables['string_slots']}, {len(sets)}, "
            f"{tables['frozensets']}, {tables['frozenset_slots']}, {len(state.codes)}, {tables['codes']} }},"
        )


LAID_OUT_VERSIONS = ((3, 13), (3, 14), (3, 15))  # static_code.h holds each one's layouts


def refuse_other_interpreters() -> None:
    if (
        sys.version_info[:2] not in LAID_OUT_VERSIONS
        or sysconfig.get_config_var("Py_GIL_DISABLED")
        or hasattr(sys, "gettotalrefcount")
    ):
        first, last = (".".join(map(str, v)) for v in (LAID_OUT_VERSIONS[0], LAID_OUT_VERSIONS[-1]))
        sys.exit(
            f"staticcode.py: static code objects are made for CPython {first} to {last} default builds, "
            f"not {sys.version}"
        )


@dataclass
class Generated:
    text: str
    code_objects: int
    marshal_only: list[str]  # modules whose code has no static form


def generate(blob: bf.Blob, runtime: RuntimeObjects, first: frozenset[str] = frozenset()) -> Generated:
    """The C of the blob's modules; the finder and the modules named in `first` are laid
    out before the others, so their objects (and the strings they share with later
    modules) sit together in the data: a start touches few of its pages."""
    writer = Writer(runtime)
    rows, marshal_only, code_objects = ["    { NULL },"] * len(blob.modules), [], 0
    early = [bool(m.flags & bf.FLAG_BOOTSTRAP) or m.name in first for m in blob.modules]
    for index in sorted(range(len(blob.modules)), key=lambda i: (not early[i], i)):
        module = blob.modules[index]
        if module.flags & bf.FLAG_NAMESPACE or not module.code:
            continue
        try:
            # Read whole before anything is written, so a refusal leaves no half module.
            top_code = MarshalReader(module.code).read()
        except NoStaticForm as why:
            marshal_only.append(f"{module.name} ({why})")
            continue
        top = writer.code(top_code)  # type: ignore[arg-type]
        code_objects += len(writer.module.codes)
        rows[index] = writer.finish_module(index, top)
    header = [
        "/* Generated by pyfreight/memimport/staticcode.py: the packed modules' code objects. */",
        '#include "static_code.h"',
        f"_Static_assert(PY_VERSION_HEX == {blob.hexversion:#x}, "
        '"the headers are of another CPython than the blob\'s");',
    ]
    table = [
        "pyfreight_static_module pyfreight_static_modules[] = {",
        *rows,
        "};",
        f"const uint32_t pyfreight_static_module_count = {len(rows)};",
    ]
    return Generated("\n".join([*header, *writer.lines, *table, ""]), code_objects, marshal_only)


# The modules a start imports from files (encodings, linecache, …): frozen and built-in
# ones never reach the blob's finder.
LIST_STARTUP_FROM_FILES = (
    "import sys; print(*(n for n, m in sys.modules.items()"
    " if getattr(getattr(m, '__spec__', None), 'has_location', False)))"
)


def startup_modules() -> frozenset[str]:
    """What this interpreter imports from files before running any code."""
    listed = subprocess.run(
        [sys.executable, "-I", "-c", LIST_STARTUP_FROM_FILES], capture_output=True, text=True, check=True
    )
    return frozenset(listed.stdout.split())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--blob", type=Path, required=True, help="the blob pack.py wrote")
    parser.add_argument("--include-dir", type=Path, required=True, help="the interpreter's include/python3.X")
    parser.add_argument("--out", type=Path, required=True, help="the C file to write")
    args = parser.parse_args()
    refuse_other_interpreters()
    blob = bf.read_blob(args.blob.read_bytes())
    if blob.hexversion != sys.hexversion:
        sys.exit(f"staticcode.py: {args.blob} was packed by another interpreter ({blob.hexversion:#x})")
    generated = generate(blob, RuntimeObjects.read(args.include_dir), startup_modules())
    partial = args.out.with_name(args.out.name + ".partial")
    partial.write_text(generated.text)
    os.replace(partial, args.out)
    for name in generated.marshal_only:
        print(f"static code: {name} keeps its marshal data")
    # Last: embed says the last line as the step's summary.
    print(
        f"static code: {generated.code_objects} code objects of {len(blob.modules)} modules, "
        f"{len(generated.text) / 1e6:.1f} MB of C"
    )


if __name__ == "__main__":
    main()
