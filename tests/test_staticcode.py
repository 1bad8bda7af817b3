"""staticcode.py, the static code object generator, on its own: its marshal reader against
the real marshal module, its per-module fallback, and its refusal of other interpreters.
The generated C is compiled and run against real archives in
test_memory_importer_integration.py."""

from __future__ import annotations

import marshal
import re
import subprocess
import sys

import pytest

from pyfreight.cpython.versions import versions_with
from pyfreight.memimport import blobformat as bf
from pyfreight.memimport import staticcode
from pyfreight.memimport.staticcode import Code, FrozenSet, MarshalReader, RuntimeObjects

SOURCE = '''
"""doc"""
import os as _os
X = (1, 2.5, 3j, -1180591620717411303424, b"bytes", "text", "näme", None, ..., True)
def f(a, /, b, *args, c=1, **kw):
    y = [a, b]
    def g():
        return y, c
    return g, x in {1, 2, 3}
'''


def test_the_reader_gives_what_marshal_stores():
    real = compile(SOURCE, "m.py", "exec")
    code = MarshalReader(marshal.dumps(real)).read()
    assert isinstance(code, Code)
    assert (code.code, code.names, code.filename, code.name) == (
        real.co_code,
        real.co_names,
        "m.py",
        "<module>",
    )
    assert code.linetable == real.co_linetable and code.exceptiontable == real.co_exceptiontable
    function = next(c for c in code.consts if isinstance(c, Code))
    real_function = next(c for c in real.co_consts if hasattr(c, "co_code"))
    assert (function.argcount, function.posonlyargcount, function.kwonlyargcount) == (2, 1, 1)
    assert set(function.localsplusnames) == {*real_function.co_varnames, *real_function.co_cellvars}
    assert function.qualname == "f" and function.flags == real_function.co_flags
    tuple_const = next(c for c in code.consts if isinstance(c, tuple) and len(c) == 10)
    assert tuple_const[:7] == (1, 2.5, 3j, -(2**70), b"bytes", "text", "näme")
    assert tuple_const[7:] == (None, ..., True)
    frozen = [c for c in function.consts if isinstance(c, FrozenSet)] + [
        c
        for inner in function.consts
        if isinstance(inner, Code)
        for c in inner.consts
        if isinstance(c, FrozenSet)
    ]
    assert [sorted(f.items) for f in frozen] == [[1, 2, 3]]  # `x in {1, 2, 3}` folds to a frozenset


def _blob(*modules: bf.Module) -> bf.Blob:
    return bf.Blob(1, b"\0\0\r\n", sys.hexversion, 0, 0, list(modules), [])


def _runtime(tmp_path) -> RuntimeObjects:
    """The runtime's objects as read from a minimal include folder."""
    include = tmp_path / "internal"
    include.mkdir()
    (include / "pycore_global_strings.h").write_text('STRUCT_FOR_ID(__name__)\nSTRUCT_FOR_STR(empty, "")\n')
    (include / "pycore_global_objects.h").write_text(
        "#define _PY_NSMALLPOSINTS 257\n#define _PY_NSMALLNEGINTS 5\n"
    )
    return RuntimeObjects.read(tmp_path)


def test_a_module_with_a_constant_it_cannot_lay_out_keeps_its_marshal_data(tmp_path):
    runtime = _runtime(tmp_path)
    assert runtime.small_ints == range(-5, 257) and "__name__" in runtime.identifiers
    good = bf.Module("good", 0, marshal.dumps(compile("A = 1\n", "good.py", "exec")))
    # A frozendict constant (3.15's marshal type '}'), which compile() does not make today.
    odd = bf.Module("odd", 0, b"}\x00\x00\x00\x00")
    generated = staticcode.generate(_blob(good, odd), runtime)
    assert generated.marshal_only == ["odd (marshal type '}' at offset 1)"]
    assert generated.code_objects == 1
    table = generated.text[generated.text.index("pyfreight_static_modules[] = {") :]
    rows = [line.strip() for line in table.splitlines()[1:3]]
    assert rows[0].startswith("{ (PyObject *)&c") and rows[1] == "{ NULL },"
    assert f"PY_VERSION_HEX == {sys.hexversion:#x}" in generated.text


def test_the_finder_and_the_start_up_modules_are_laid_out_first_and_together(tmp_path):
    def module(name: str, flags: int = 0) -> bf.Module:
        source = f"SHARED = 'shared-name'\nOWN = 'own-{name}'\n"
        return bf.Module(name, flags, marshal.dumps(compile(source, f"{name}.py", "exec")))

    blob = _blob(module("alpha"), module("beta"), module("finder", bf.FLAG_BOOTSTRAP), module("gamma"))
    text = staticcode.generate(blob, _runtime(tmp_path), first=frozenset({"gamma"})).text

    def defined(string: str) -> int:
        return text.index(staticcode.c_bytes(string.encode()))

    # Written in the order finder, gamma, then the rest in the blob's order; the string
    # every module holds is written with the first of them.
    assert defined("own-finder") < defined("own-gamma") < defined("own-alpha") < defined("own-beta")
    assert defined("shared-name") < defined("own-gamma")
    # The module table stays in the blob's order (row i is module i), each row naming its
    # module's top code object, numbered in the order they were written.
    table = text[text.index("pyfreight_static_modules[] = {") :].splitlines()[1:5]
    alpha, beta, finder, gamma = (int(re.search(r"\(PyObject \*\)&c(\d+)", row).group(1)) for row in table)
    assert finder < gamma < alpha < beta


def test_other_interpreters_are_refused_in_one_line(tmp_path):
    if sys.version_info[:2] in staticcode.LAID_OUT_VERSIONS:
        pytest.skip("the driver's interpreter is one staticcode.py lays out")
    proc = subprocess.run(
        [
            sys.executable,
            staticcode.__file__,
            "--blob",
            "x",
            "--include-dir",
            "y",
            "--out",
            str(tmp_path / "o.c"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith(
        "staticcode.py: static code objects are made for CPython 3.13 to 3.15 default"
    )
    assert not (tmp_path / "o.c").exists()


def test_the_generator_lays_out_the_versions_the_data_names():
    """staticcode.py runs under the archive's interpreter and cannot read cpython/versions.yaml:
    its own list must be the versions the data gives the static_code feature."""
    assert [f"{major}.{minor}" for major, minor in staticcode.LAID_OUT_VERSIONS] == versions_with(
        "static_code"
    )
