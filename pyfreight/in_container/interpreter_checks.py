"""Checks an installed pyfreight CPython from the inside. Run by the interpreter under
test (in a clean container, from an unusual path); needs nothing but the stdlib.
Prints one line per check and exits non-zero if any failed."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same files, as the package names them
    from pyfreight.in_container.check_wheel import tiny_wheel
    from pyfreight.in_container.shared_checks import TreeFacts, check, run_checks
else:  # run as a script, beside which check_wheel.py and shared_checks.py are copied
    from check_wheel import tiny_wheel
    from shared_checks import TreeFacts, check, run_checks

# Modules that cannot import on Linux, or must not be imported by a check, and why.
NOT_IMPORTABLE = {
    "_android_support": "Android only",
    "_apple_support": "Apple platforms only",
    "_ios_support": "iOS only",
    "_overlapped": "Windows only",
    "_winapi": "Windows only",
    "_wmi": "Windows only",
    "msvcrt": "Windows only",
    "nt": "Windows only",
    "winreg": "Windows only",
    "winsound": "Windows only",
    "_scproxy": "macOS only",
    "_dbm": "not built: no permissively licensed dbm backend",
    "_gdbm": "not built: gdbm is GPL",
    "dbm.gnu": "needs _gdbm (GPL, not built)",
    "dbm.ndbm": "needs _dbm (no permissive backend, not built)",
    "_pyrepl._minimal_curses": "3.13's fallback that dlopens a shared libncurses; curses is built in",
    "antigravity": "opens a web browser when imported",
    "this": "prints the Zen of Python when imported",
    "_pyrepl.windows_console": "Windows only",
    "_pyrepl.windows_eventqueue": "Windows only",
    "asyncio.windows_events": "Windows only",
    "asyncio.windows_utils": "Windows only",
    "multiprocessing.popen_spawn_win32": "Windows only",
    "encodings.mbcs": "Windows only",
    "encodings.oem": "Windows only",
    "encodings.cp65001": "Windows only",
}
BUILTIN_REQUIRED = [
    "_ssl", "_hashlib", "_sqlite3", "_lzma", "_bz2", "zlib", "_ctypes", "_curses",
    "_curses_panel", "readline", "_uuid", "pyexpat", "_elementtree", "_decimal", "_tkinter",
]  # fmt: skip


@check("the only shared objects are the test-only modules in lib-dynload")
def _only_test_modules_shared() -> str:
    # None of them is a module of the stdlib proper (sys.stdlib_module_names leaves the
    # test ones out).
    dynload = Path(sysconfig.get_path("platstdlib")) / "lib-dynload"
    # libpython, for programs that embed Python, is no module.
    libdir = Path(sysconfig.get_config_var("LIBDIR")).resolve()
    shared = [p for p in sorted(Path(sys.base_prefix).rglob("*.so*"))
              if not (p.name.startswith("libpython3") and p.parent.resolve() == libdir)]  # fmt: skip
    misplaced = [
        str(p)
        for p in shared
        if p.parent.resolve() != dynload.resolve() or p.name.split(".")[0] in sys.stdlib_module_names
    ]
    assert not misplaced, f"shared objects that are not test-only modules: {misplaced[:5]}"
    return f"{len(shared)} test-only shared modules"


def _has_program_interpreter(executable: Path) -> bool:
    """Whether an ELF executable names a dynamic loader (a PT_INTERP program header)."""
    import struct

    data = executable.read_bytes()
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        (phoff,) = struct.unpack_from(order + "Q", data, 0x20)
        entsize, count = struct.unpack_from(order + "HH", data, 0x36)
    else:
        (phoff,) = struct.unpack_from(order + "I", data, 0x1C)
        entsize, count = struct.unpack_from(order + "HH", data, 0x2A)
    pt_interp = 3
    return any(
        struct.unpack_from(order + "I", data, phoff + i * entsize)[0] == pt_interp for i in range(count)
    )


@check("an extension module loads from a shared library (wheels need it)")
def _shared_extension() -> str:
    # The test-only modules of lib-dynload are C extension modules compiled against the
    # tree, loaded with dlopen as a wheel's are. A static interpreter (the C library
    # linked in: no program interpreter) has none and cannot load any: it must refuse.
    # macOS programs are always dynamic (libSystem); elsewhere, no program interpreter
    # means a static one.
    if sys.platform != "darwin" and not _has_program_interpreter(Path(sys.executable).resolve()):
        import importlib.machinery

        with tempfile.TemporaryDirectory() as tmp:
            Path(tmp, "pf_shared" + importlib.machinery.EXTENSION_SUFFIXES[0]).write_bytes(b"\x7fELF")
            sys.path.insert(0, tmp)
            try:
                __import__("pf_shared")
            except ImportError as exc:
                return f"static interpreter: a shared module is refused ({exc})"
            finally:
                sys.path.remove(tmp)
        raise AssertionError("a static interpreter imported a shared module")
    dynload = Path(sysconfig.get_path("platstdlib")) / "lib-dynload"
    module = next(m for m in ("xxlimited", "_testcapi", "_testbuffer") if list(dynload.glob(f"{m}.*.so")))
    __import__(module)
    return f"{module} from lib-dynload"


@check("ctypes calls into libc")
def _ctypes() -> str:
    import ctypes

    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x * 2)
    assert callback(21) == 42
    # Floats travel in registers of their own, each architecture its own way (RISC-V
    # NaN-boxes a float in a 64-bit register): through libffi both ways, a result each.
    scale = ctypes.CFUNCTYPE(ctypes.c_float, ctypes.c_float, ctypes.c_double)(lambda f, d: f * d)
    assert scale(1.5, 4.0) == 6.0, scale(1.5, 4.0)
    buffer = ctypes.create_string_buffer(9)
    ctypes.memmove(buffer, b"pyfreight", 9)  # libc's memmove, through libffi
    assert buffer.raw == b"pyfreight"
    # macOS programs are always dynamic (libSystem); elsewhere, no program interpreter
    # means a static one.
    if sys.platform != "darwin" and not _has_program_interpreter(Path(sys.executable).resolve()):
        # static: nothing can be opened with dlopen, the program itself included
        assert ctypes.pythonapi is None, ctypes.pythonapi
        return "static interpreter: libffi calls and callbacks; no dlopen, pythonapi is None"
    libc = ctypes.CDLL(None)
    assert libc.strlen(b"pyfreight") == 9
    powf = libc.powf  # the C library's float function, float arguments and result
    powf.argtypes, powf.restype = [ctypes.c_float, ctypes.c_float], ctypes.c_float
    assert powf(2.0, 10.0) == 1024.0, powf(2.0, 10.0)
    return "CDLL(None).strlen and powf, libffi calls and callbacks with ints and floats"


# systemd's MemoryDenyWriteExecute is prctl(PR_SET_MDWE) on Linux 6.3 and later: no
# mapping may gain execute permission. glibc maps a thread's stack executable when the
# program has no non-executable PT_GNU_STACK header, which MDWE refuses: threading fails.
# A static interpreter (musl's `static`) cannot open anything with dlopen, so Python
# cannot reach prctl there; it has no executable stacks to ask for either (validate
# holds every ELF file's PT_GNU_STACK non-executable).
MDWE_PROGRAM = """
import ctypes, os, sys, threading
try:
    libc = ctypes.CDLL(None, use_errno=True)
except OSError as exc:
    sys.exit(f"SKIP prctl cannot be called without dlopen ({exc}): a static interpreter")
try:
    prctl = libc.prctl
except AttributeError:
    sys.exit("SKIP no prctl in this C library")
PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN = 65, 1
if prctl(PR_SET_MDWE, PR_MDWE_REFUSE_EXEC_GAIN, 0, 0, 0) != 0:
    sys.exit("SKIP PR_SET_MDWE refused: " + os.strerror(ctypes.get_errno()))
started = []
thread = threading.Thread(target=started.append, args=("ran",))
thread.start()
thread.join()
assert started == ["ran"], started
print(os.uname().release)
"""


@check("a thread starts under MemoryDenyWriteExecute (prctl PR_SET_MDWE), where the kernel has it")
def _thread_under_mdwe() -> str:
    # In a child: MDWE cannot be turned off again, and the JIT's check needs exec mappings.
    ran = subprocess.run([sys.executable, "-c", MDWE_PROGRAM], capture_output=True, text=True, timeout=60)
    if ran.stderr.startswith("SKIP "):
        return f"not checked: {ran.stderr.strip().removeprefix('SKIP ')}"
    assert ran.returncode == 0, (ran.stderr.strip().splitlines() or [f"rc {ran.returncode}"])[-1]
    return f"a thread ran under MDWE (kernel {ran.stdout.strip()})"


@check("curses initscr on a pseudo-terminal")
def _curses() -> None:
    import pty

    code = "import curses; s = curses.initscr(); curses.endwin(); print('ok', curses.longname())"
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["TERM"] = "xterm"
        # The tree's own terminal database, which a system without one (a bare musl
        # image) needs: what docs/using the tree tells users to point TERMINFO at.
        os.environ["TERMINFO"] = os.path.join(sys.base_prefix, "share", "terminfo")
        os.execv(sys.executable, [sys.executable, "-c", code])
    output = b""
    while True:
        try:
            chunk = os.read(fd, 1024)
        except OSError:
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    assert status == 0 and b"ok" in output, output[-300:]


@check("readline, uuid, decimal")
def _misc() -> str:
    import decimal
    import readline
    import uuid

    readline.add_history("x")
    assert readline.get_current_history_length() >= 1
    assert uuid.uuid1().version == 1 and uuid.uuid4().version == 4
    assert decimal.Decimal("1.1") + decimal.Decimal("2.2") == decimal.Decimal("3.3")
    version: str = readline._READLINE_LIBRARY_VERSION  # type: ignore[attr-defined]  # not in typeshed
    return version


@check("a free-threaded build runs without the GIL")
def _free_threading() -> str:
    gil_enabled = sys._is_gil_enabled()  # type: ignore[attr-defined]  # 3.13+; only 3.13+ is built
    if not sysconfig.get_config_var("Py_GIL_DISABLED"):
        assert gil_enabled, "a default build reports the GIL disabled"
        return "not a free-threaded build; the GIL is on"
    assert not gil_enabled, "Py_GIL_DISABLED build, yet the GIL is enabled"
    assert sys.abiflags == "t", f"abiflags {sys.abiflags!r}, expected 't'"
    return "GIL disabled, abiflags t"


JIT_PROGRAM = """
import sys
def hot(n):
    total = 0
    for i in range(n):
        total += i % 7
    return total
assert hot(200_000) == 599_994, "the JIT computed a wrong sum"
print(sys._jit.is_enabled())
"""


@check("the experimental JIT: built in and off, on with PYTHON_JIT=1, or not built")
def _jit() -> str:
    jit = getattr(sys, "_jit", None)  # 3.14+
    built = "--enable-experimental-jit" in (sysconfig.get_config_var("CONFIG_ARGS") or "")
    if jit is None:
        assert not built, "configured with the JIT, yet sys._jit is missing"
        return "no sys._jit in this CPython"
    assert jit.is_available() == built, (
        f"sys._jit.is_available() is {jit.is_available()}; configured: {built}"
    )
    if not built:
        return "not built in (sys._jit.is_available() False)"
    assert not jit.is_enabled(), "the JIT is on without PYTHON_JIT=1"
    env = {**os.environ, "PYTHON_JIT": "1"}
    ran = subprocess.run(
        [sys.executable, "-c", JIT_PROGRAM], env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0 and ran.stdout.strip() == "True", (
        f"PYTHON_JIT=1: {ran.stdout}{ran.stderr[-300:]}"
    )
    return "sys._jit.is_available() True; off by default; PYTHON_JIT=1 turns it on and a hot loop runs"


@check("venv with pip")
def _venv() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        env = Path(tmp) / "env"
        subprocess.run([sys.executable, "-m", "venv", str(env)], check=True)
        out = subprocess.run(
            [str(env / "bin" / "python"), "-m", "pip", "--version"],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        probe = "import sys, ssl; print(sys.prefix != sys.base_prefix)"
        inside = subprocess.run(
            [str(env / "bin" / "python"), "-c", probe], check=True, capture_output=True, text=True
        ).stdout
        assert inside.strip() == "True"
        return out.split(" from ")[0]


@check("venv through a symlink outside the tree, a venv of it, pip install of a wheel")
def _venv_through_symlink() -> str:
    tree = Path(sys.base_prefix).resolve()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        # uv's layout: ~/.local/bin/python3.X is a symlink into the managed tree.
        (root / "bin").mkdir()
        link = root / "bin" / "py"
        link.symlink_to(Path(sys.executable).resolve())
        wheel = tiny_wheel(root)
        first, second = root / "v1", root / "v2"
        subprocess.run([str(link), "-m", "venv", str(first)], check=True)
        home = (first / "pyvenv.cfg").read_text().split("home = ", 1)[1].splitlines()[0]
        assert home == str(root / "bin"), f"pyvenv.cfg home = {home}"  # the case that failed
        subprocess.run([str(first / "bin" / "python"), "-m", "venv", str(second)], check=True)
        probe = "import sys, ssl; print(sys.prefix); print(sys.base_prefix)"
        for env in (first, second):
            python = str(env / "bin" / "python")
            prefix, base = subprocess.run(
                [python, "-c", probe], check=True, capture_output=True, text=True
            ).stdout.splitlines()
            assert prefix == str(env) and Path(base).resolve() == tree, (prefix, base)
            pip = [python, "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check"]
            subprocess.run([*pip, "--quiet", str(wheel)], check=True)
            ran = subprocess.run([str(env / "bin" / "pfcheck")], check=True, capture_output=True, text=True)
            assert ran.stdout.startswith(f"pfcheck {env}/lib/"), ran.stdout
        return f"home = {home}; sys.base_prefix = {tree}"


@check("bin/python3-config prints flags with no build path")
def _python_config() -> str:
    tree = Path(sys.base_prefix).resolve()
    out = subprocess.run(
        [str(tree / "bin" / "python3-config"), "--cflags", "--ldflags"],
        check=True,
        capture_output=True,
        text=True,
    )
    assert not out.stderr, out.stderr
    include = f"-I{tree}/include/python{sysconfig.get_python_version()}{sys.abiflags}"
    assert include in out.stdout and f"-L{tree}/lib" in out.stdout, out.stdout
    # The tree itself may sit under a folder named install (an archive unpacks to
    # python/install/), so only what is left after removing the tree's own path counts.
    rest = out.stdout.replace(str(tree), "<tree>")
    leaks = [b for b in ("/install", "/tools/", "/build/work", "/sysroot") if b in rest]
    assert not leaks, f"{leaks} in {out.stdout}"
    return out.stdout.splitlines()[0].split(" -fno")[0]


@check("libpython, for programs that embed Python, loads and names this version")
def _libpython() -> str:
    if sysconfig.get_config_var("Py_ENABLE_SHARED") != 1:
        return "not shipped (the C library is linked in: nothing could load it)"
    library = Path(sysconfig.get_config_var("LIBDIR")) / sysconfig.get_config_var("INSTSONAME")
    assert library.is_file() and library.is_relative_to(Path(sys.base_prefix)), library
    # In a process of its own: a second runtime in this one is not what it is for.
    probe = (
        "import ctypes, sys; lib = ctypes.CDLL(sys.argv[1]); "
        "lib.Py_GetVersion.restype = ctypes.c_char_p; print(lib.Py_GetVersion().decode())"
    )
    out = subprocess.run(
        [sys.executable, "-I", "-c", probe, str(library)], check=True, capture_output=True, text=True
    )
    assert out.stdout.split()[0] == sys.version.split()[0], out.stdout
    return f"{library.relative_to(Path(sys.base_prefix))}: {out.stdout.split()[0]}"


@check("lib/python3.X/config-*/python-config.py runs by its shebang")
def _python_config_py() -> str:
    [script] = Path(sysconfig.get_config_var("LIBPL")).glob("python-config.py")
    with open(script) as fh:
        shebang = fh.readline()
    assert "/install" not in shebang, shebang
    out = subprocess.run([str(script), "--prefix"], check=True, capture_output=True, text=True).stdout
    assert Path(out.strip()).resolve() == Path(sys.base_prefix).resolve(), out
    return out.strip()


@check("sysconfig names a plain host compiler and no build paths")
def _sysconfig() -> str:
    cc = sysconfig.get_config_var("CC")
    assert cc.split()[0] in ("cc", "gcc", "clang"), cc
    prefix = sysconfig.get_config_var("prefix")
    assert Path(prefix).resolve() == Path(sys.base_prefix).resolve(), prefix
    bad = ["/tools/", "/build/work", "/sysroot"]
    values = sysconfig.get_config_vars()
    leaks = [k for k, v in values.items() if isinstance(v, str) and any(b in v for b in bad)]
    assert not leaks, leaks[:10]
    return f"CC={cc!r} prefix={prefix!r}"


def tree_facts() -> TreeFacts:
    """What the shared checks need to know of a Unix tree (Linux, or macOS: no Tk there,
    _scproxy instead, as cpython/extensions.yaml's for_os says)."""
    wanted = BUILTIN_REQUIRED + (["_zstd"] if sys.version_info >= (3, 14) else [])
    if sys.platform == "darwin":
        return TreeFacts(
            builtin_required=[m for m in wanted if m != "_tkinter"] + ["_scproxy"],
            not_importable=NOT_IMPORTABLE,
            tcl_library=None,
            no_tkinter_reason="not built for macOS (Tk's Aqua port needs Cocoa: cpython/extensions.yaml)",
        )
    tcl = Path(sys.base_prefix) / "lib" / "tcl8.6"
    return TreeFacts(builtin_required=wanted, not_importable=NOT_IMPORTABLE, tcl_library=tcl)


if __name__ == "__main__":
    sys.exit(run_checks(tree_facts()))
