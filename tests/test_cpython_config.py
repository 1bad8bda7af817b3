from __future__ import annotations

import pytest

from pyfreight.cpython.options import BuildOptions, compiler_env, configure_args
from pyfreight.errors import PyfreightError
from pyfreight.targets import DEFAULT_TARGET


@pytest.mark.parametrize(
    ("text", "expected", "absent"),
    [
        ("noopt", [], ["--enable-optimizations", "--with-lto=thin", "--with-pydebug"]),
        ("debug", ["--with-pydebug"], ["--enable-optimizations", "--with-tail-call-interp"]),
        ("lto", ["--with-lto=thin"], ["--enable-optimizations"]),
        ("pgo", ["--enable-optimizations"], ["--with-lto=thin"]),
        ("pgo+lto", ["--enable-optimizations", "--with-lto=thin"], ["--disable-gil"]),
        ("freethreaded+pgo+lto", ["--disable-gil", "--enable-optimizations"], []),
    ],
)
def test_configure_args_per_option(text, expected, absent):
    args = configure_args("3.14.7", BuildOptions.parse(text))
    for arg in expected:
        assert arg in args
    for arg in absent:
        assert arg not in args
    assert "--with-readline=editline" in args and "--with-system-expat" in args
    assert str(BuildOptions.parse(text)) == text


def test_tail_call_interpreter_only_from_3_14():
    assert "--with-tail-call-interp" in configure_args("3.14.7", BuildOptions.parse("noopt"))
    assert "--with-tail-call-interp" not in configure_args("3.13.15", BuildOptions.parse("noopt"))


def test_bad_options_are_named():
    with pytest.raises(PyfreightError, match="unknown build option 'fast'"):
        BuildOptions.parse("fast")
    with pytest.raises(PyfreightError, match=r"3\.13 or newer"):
        configure_args("3.12.9", BuildOptions.parse("freethreaded+noopt"))


def test_recorded_flags_are_host_safe():
    env = compiler_env(BuildOptions.parse("noopt"), DEFAULT_TARGET)
    for var in ("CFLAGS", "LDFLAGS"):
        assert "/tools" not in env[var] and "lld" not in env[var] and "sysroot" not in env[var]
    assert "-fuse-ld=lld" in env["LDFLAGS_NODIST"]
