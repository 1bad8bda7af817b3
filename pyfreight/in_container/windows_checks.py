"""Checks an installed pyfreight CPython for Windows from the inside, as
interpreter_checks.py does on Linux. Run by the interpreter under test under Wine, from
a folder with a space in its name; needs nothing but the stdlib. Prints one line per
check and exits non-zero if any failed.

Argument 1: a JSON object from the target file: `platform`, the sysconfig platform the
interpreter must report (pip chooses wheels by it), and `limits`, the checks Wine
cannot pass, each with the reason (`run.wine.limits`). Such a check still runs; when it
fails it is reported as WINE with the reason and not counted, and when it passes that
is said too, so the list can shrink when Wine catches up."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same files, as the package names them
    from pyfreight.in_container.check_wheel import tiny_wheel
    from pyfreight.in_container.shared_checks import TreeFacts, check, run_checks
else:  # run as a script, beside which check_wheel.py and shared_checks.py are copied
    from check_wheel import tiny_wheel
    from shared_checks import TreeFacts, check, run_checks

# Modules that cannot import on Windows, or must not be imported by a check, and why.
NOT_IMPORTABLE = {
    "_android_support": "Android only",
    "_apple_support": "Apple platforms only",
    "_ios_support": "iOS only",
    "_scproxy": "macOS only",
    "curses": "needs _curses: Unix only",
    "_curses": "Unix only",
    "_curses_panel": "Unix only",
    "readline": "Unix only",
    "termios": "Unix only",
    "tty": "needs termios: Unix only",
    "pty": "needs termios: Unix only",
    "fcntl": "Unix only",
    "grp": "Unix only",
    "pwd": "Unix only",
    "resource": "Unix only",
    "syslog": "Unix only",
    "posix": "Unix only",
    "_posixsubprocess": "Unix only",
    "_posixshmem": "Unix only",
    "_dbm": "not built: no permissively licensed dbm backend",
    "_gdbm": "not built: gdbm is GPL",
    "_wmi": "not built: C++ on MSVC's COM support library (windows/projects.yaml)",
    "dbm.gnu": "needs _gdbm (GPL, not built)",
    "dbm.ndbm": "needs _dbm (no permissive backend, not built)",
    "_pyrepl.unix_console": "Unix only",
    "_pyrepl.unix_eventqueue": "Unix only",
    "_pyrepl.fancy_termios": "Unix only",
    "_pyrepl._minimal_curses": "Unix only",
    "_pyrepl.curses": "needs _curses or _pyrepl._minimal_curses: Unix only (3.13)",
    "profiling.sampling.live_collector": "needs _curses: Unix only (3.15's live profiler view)",
    "asyncio.unix_events": "Unix only",
    "multiprocessing.popen_fork": "Unix only",
    "multiprocessing.popen_forkserver": "Unix only",
    "multiprocessing.popen_spawn_posix": "Unix only",
    "multiprocessing.forkserver": "Unix only",
    "multiprocessing.resource_sharer": "Unix only",
    "antigravity": "opens a web browser when imported",
    "this": "prints the Zen of Python when imported",
}
BUILTIN_REQUIRED = [
    "_ssl", "_hashlib", "_sqlite3", "_lzma", "_bz2", "zlib", "_ctypes", "_socket", "select",
    "pyexpat", "_elementtree", "_decimal", "unicodedata", "_uuid", "_overlapped", "_multiprocessing",
    "_asyncio", "_queue", "_zoneinfo", "winsound", "nt", "winreg", "_winapi", "msvcrt", "_tkinter",
]  # fmt: skip
TARGET: dict = json.loads(sys.argv[1]) if len(sys.argv) > 1 else {}


def _python(*args: str, cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    """The interpreter under test in a child process: a call Wine does not implement
    aborts the process that makes it, and only the child is lost."""
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600, cwd=cwd)


def _interpreter_dll() -> Path:
    """python3XX.dll (python3XXt.dll without the GIL) beside python.exe."""
    suffix = "t" if sysconfig.get_config_var("Py_GIL_DISABLED") else ""
    return Path(sys.base_prefix) / f"python{sys.version_info[0]}{sys.version_info[1]}{suffix}.dll"


@check("runs from a folder with a space, finding its prefix beside python.exe")
def _prefix() -> str:
    here = Path(sys.executable).resolve().parent
    assert " " in str(here), here
    assert Path(sys.prefix).resolve() == here, (sys.prefix, here)
    assert Path(os.__file__).resolve().parent == here / "Lib", os.__file__
    return sys.prefix


@check("no extension module outside the interpreter's DLL")
def _no_pyd() -> str:
    dlls = Path(sys.base_prefix) / "DLLs"
    pyds = sorted(p.name for p in dlls.glob("*.pyd")) if dlls.is_dir() else []
    assert not pyds, f"extension modules outside the interpreter: {pyds}"
    return "DLLs\\ holds no .pyd"


@check("select.select and sockets with a timeout, whatever the handle's value")
def _socket_timeout() -> str:
    import select
    import socket

    # A Windows socket is a handle, soon far above FD_SETSIZE (64); a build that bounds
    # handles by it (as CPython does for compilers other than MSVC) cannot wait on them.
    held = [socket.socket() for _ in range(80)]
    try:
        with socket.create_server(("127.0.0.1", 0)) as server:
            server.settimeout(10)
            with socket.create_connection(server.getsockname(), timeout=10) as client:
                accepted, _ = server.accept()
                with accepted:
                    accepted.settimeout(10)
                    client.sendall(b"ping")
                    readable, writable, _ = select.select([accepted], [client], [], 10)
                    assert (readable, writable) == ([accepted], [client]), (readable, writable)
                    assert accepted.recv(4) == b"ping"
                    handle = max(server.fileno(), client.fileno(), accepted.fileno())
    finally:
        for sock in held:
            sock.close()
    assert handle > 64, f"handles stayed below FD_SETSIZE: {handle}"
    return f"handle {handle}"


@check("ctypes calls a Windows API and the interpreter's own C API")
def _ctypes() -> str:
    import ctypes

    callback = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_int)(lambda x: x * 2)
    assert callback(21) == 42
    if sys.platform == "win32":  # always here; the guard is for the type checker on Linux
        assert ctypes.windll.kernel32.GetCurrentProcessId() == os.getpid()
    assert ctypes.pythonapi.Py_IsInitialized() == 1
    # python3.dll, the stable ABI's name (python3t.dll free-threaded), forwards to the
    # running python3XX.dll
    name = "python3t.dll" if sysconfig.get_config_var("Py_GIL_DISABLED") else "python3.dll"
    forwarder = ctypes.PyDLL(os.path.join(sys.base_prefix, name))
    assert forwarder.Py_IsInitialized() == 1
    return f"kernel32.GetCurrentProcessId, pythonapi, {name}"


@check("ssl reads Windows' certificate store")
def _certificate_store() -> str:
    import ssl

    if sys.platform != "win32":  # never here; the guard is for the type checker on Linux
        raise AssertionError(sys.platform)
    roots = ssl.enum_certificates("ROOT")
    assert isinstance(roots, list)
    return f"{len(roots)} root certificates"


@check("decimal, uuid, xml")
def _misc() -> str:
    import decimal
    import uuid
    import xml.etree.ElementTree as ET

    assert str(decimal.Decimal(1) / decimal.Decimal(7)) == "0.1428571428571428571428571429"
    assert uuid.uuid4().version == 4
    node = ET.fromstring("<a><b>t</b></a>").find("b")
    assert node is not None and node.text == "t"
    return f"libmpdec {decimal.__libmpdec_version__}"


@check("a free-threaded build runs without the GIL, and its modules are tagged so")
def _free_threading() -> str:
    import importlib.machinery

    free = bool(sysconfig.get_config_var("Py_GIL_DISABLED"))
    gil = sys._is_gil_enabled()  # type: ignore[attr-defined]  # 3.13+; only 3.14 is built for Windows
    assert gil is not free, f"Py_GIL_DISABLED is {free}, yet the GIL is {'on' if gil else 'off'}"
    tag = importlib.machinery.EXTENSION_SUFFIXES[0]
    assert tag.startswith(f".cp{sys.version_info[0]}{sys.version_info[1]}{'t' if free else ''}-"), tag
    return f"GIL disabled, {tag}" if free else f"not a free-threaded build; the GIL is on, {tag}"


@check("sysconfig: the platform pip chooses wheels by, and no build paths")
def _sysconfig() -> str:
    import importlib.machinery

    platform = sysconfig.get_platform()
    assert platform == TARGET["platform"], (platform, TARGET["platform"])
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    # the wheel tag's spelling of the platform, as PyPI's extension modules are named
    assert suffix in importlib.machinery.EXTENSION_SUFFIXES, suffix
    assert suffix.endswith(f"-{platform.replace('-', '_')}.pyd"), suffix
    bad = ["/tools/", "/build/work", "/sysroot", "/inputs/"]
    values = sysconfig.get_config_vars()
    leaks = [k for k, v in values.items() if isinstance(v, str) and any(b in v for b in bad)]
    assert not leaks, leaks[:10]
    return f"{platform}, {suffix}"


@check("os.getppid")
def _getppid() -> str:
    out = _python("-c", "import os; print(os.getppid())")
    assert out.returncode == 0 and int(out.stdout) == os.getpid(), (out.returncode, out.stderr[-300:])
    return out.stdout.strip()


@check("pip in the tree: Scripts\\pip.exe, pip3.exe, pip3.X.exe run its pip, wherever the tree is")
def _pip_scripts() -> str:
    # The tree was built elsewhere and is checked from a folder with a space: a launcher
    # that named python.exe by the build's path, or split the path at the space, fails.
    prefix = Path(sys.prefix).resolve()
    minor = f"{sys.version_info.major}.{sys.version_info.minor}"
    found = []
    for name in ("pip", f"pip{sys.version_info.major}", f"pip{minor}"):
        script = prefix / "Scripts" / f"{name}.exe"
        ran = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=600)
        assert ran.returncode == 0, (name, ran.returncode, ran.stderr[-300:])
        version, _, rest = ran.stdout.partition(" from ")
        where = Path(rest.rsplit(" (python ", 1)[0])
        assert where.resolve() == prefix / "Lib" / "site-packages" / "pip", (name, ran.stdout)
        assert rest.strip().endswith(f"(python {minor})"), (name, ran.stdout)
        found.append(version)
    assert len(set(found)) == 1, found
    return f"{found[0]} from Lib\\site-packages"


@check("venv with pip installing a local wheel")
def _venv() -> str:
    with tempfile.TemporaryDirectory() as tmp:
        env = Path(tmp) / "env"
        made = _python("-m", "venv", str(env))  # with pip, by the bundled ensurepip
        assert made.returncode == 0, made.stderr.strip().splitlines()[-1:] or made.returncode
        python = env / "Scripts" / "python.exe"  # venvlauncher.exe, copied and renamed
        pip = [str(python), "-m", "pip", "install", "--no-index", "--no-deps", "--disable-pip-version-check"]
        installed = subprocess.run(
            [*pip, "--quiet", str(tiny_wheel(Path(tmp)))], capture_output=True, text=True, timeout=600
        )
        assert installed.returncode == 0, installed.stderr[-300:]
        # the console script pip made (a launcher .exe) runs the module from the venv
        script = env / "Scripts" / "pfcheck.exe"
        ran = subprocess.run([str(script)], capture_output=True, text=True, timeout=60)
        assert ran.returncode == 0, ran.stderr[-300:]
        where = Path(ran.stdout.split(" ", 1)[1].strip())
        assert where.is_relative_to(env / "Lib" / "site-packages"), ran.stdout
        version = subprocess.run(
            [str(python), "-m", "pip", "--version"], capture_output=True, text=True, timeout=600
        )
        return f"{version.stdout.split(' from ')[0]}; pfcheck.exe ran {where.relative_to(env)}"


@check("math.log2 and math.log10 of subnormal numbers (zig's compiler runtime supplies them)")
def _subnormal_logs() -> str:
    import math

    # Exact: log2 of a power of two. Subnormal doubles are 2**-1023 down to 2**-1074.
    for n in range(1023, 1075):
        if math.log2(2.0**-n) != -n:
            raise AssertionError(f"math.log2(2.0**-{n}) = {math.log2(2.0**-n)!r}, not {-n}.0")
    # Correctly rounded answers (CPython's Lib/test/mathdata/math_testcases.txt, log20410).
    if math.log2(1e-308) != -1023.1538532253076:
        raise AssertionError(f"math.log2(1e-308) = {math.log2(1e-308)!r}, not -1023.1538532253076")
    if not math.isclose(math.log10(1e-310), -310.0, rel_tol=1e-15):
        raise AssertionError(f"math.log10(1e-310) = {math.log10(1e-310)!r}, not -310.0")
    return "2.0**-1023 ... 2.0**-1074, 1e-308, 1e-310"


@check("time.strftime refuses what the UCRT cannot format, with ValueError as MSVC builds do")
def _strftime_limits() -> str:
    import time

    refused = []
    for year, fmt in ((10000, "%Y"), (0, "%Y"), (2000, "%Q")):
        try:
            answer = time.strftime(fmt, (year, 1, 1, 0, 0, 0, 0, 1, 0))
        except ValueError as exc:
            refused.append(f"{fmt} of {year}: {exc}")
        else:
            raise AssertionError(f"time.strftime({fmt!r}) of year {year} gave {answer!r}, not ValueError")
    return "; ".join(refused)


@check("python3XX.dll holds _PyRuntime in the PyRuntime section out-of-process debuggers read")
def _pyruntime_section() -> str:
    import struct

    dll = _interpreter_dll()
    image = dll.read_bytes()
    header = struct.unpack_from("<I", image, 0x3C)[0]
    count, optional = (
        struct.unpack_from("<H", image, header + 6)[0],
        struct.unpack_from("<H", image, header + 20)[0],
    )
    table = header + 24 + optional
    for offset in range(table, table + 40 * count, 40):
        # Eight bytes of name, as MSVC's linker and lld truncate it and debuggers compare it.
        if image[offset : offset + 8] == b"PyRuntim":
            raw = struct.unpack_from("<I", image, offset + 20)[0]
            cookie = image[raw : raw + 8]
            if cookie != b"xdebugpy":  # _Py_Debug_Cookie, the first bytes of _PyRuntime
                raise AssertionError(
                    f"{dll.name}: section PyRuntim starts with {cookie!r}, not _PyRuntime's cookie"
                )
            return f"{dll.name}: section PyRuntim at file offset {raw:#x}"
    raise AssertionError(f"{dll.name} has no PyRuntime section: debuggers cannot find _PyRuntime")


def _file_version(path: Path) -> str:
    """The FileVersion string of `path`'s version resource, as Explorer shows it."""
    import ctypes

    if sys.platform != "win32":  # never here; the guard is for the type checker on Linux
        raise AssertionError(sys.platform)
    version = ctypes.windll.version
    size = version.GetFileVersionInfoSizeW(str(path), None)
    assert size, f"{path.name} has no version resource"
    data = ctypes.create_string_buffer(size)
    assert version.GetFileVersionInfoW(str(path), 0, size, data), path.name
    value, length = ctypes.c_void_p(), ctypes.c_uint()
    query = "\\StringFileInfo\\000004b0\\FileVersion"
    assert version.VerQueryValueW(data, query, ctypes.byref(value), ctypes.byref(length)), path.name
    return ctypes.wstring_at(value, length.value).rstrip("\0")


@check("python.exe and pythonw.exe carry CPython's manifest, python3XX.dll its version")
def _resources() -> str:
    import platform

    # Without the manifest's supportedOS entries Windows tells a program it runs on
    # Windows 8 (6.2), whatever it is: platform.win32_ver() then mixes two versions.
    # pythonw.exe has no console: each program writes its answer to a file.
    script = (
        "import sys; v = sys.getwindowsversion(); p = v.platform_version; "
        "open(sys.argv[1], 'w').write(f'{v.major}.{v.minor} {p[0]}.{p[1]}')"
    )
    home = Path(sys.base_prefix)
    told = ""
    for program in ("python.exe", "pythonw.exe"):
        with tempfile.TemporaryDirectory() as tmp:
            answer = Path(tmp) / "answer.txt"
            done = subprocess.run(
                [str(home / program), "-c", script, str(answer)], capture_output=True, text=True, timeout=600
            )
            assert done.returncode == 0, (program, done.stderr.strip().splitlines()[-1:])
            reported, actual = answer.read_text().split()
        assert reported == actual, (
            f"{program} is told Windows {reported} on Windows {actual}: "
            "it has no manifest naming the Windows versions it supports"
        )
        told = reported
    expected = platform.python_version()
    for image in (_interpreter_dll(), home / "python.exe"):
        found = _file_version(image)
        assert found == expected, f"{image.name}: version resource says {found!r}, not {expected}"
    return f"told Windows {told}; version resources say {expected}"


@check("an MSVC-built wheel from PyPI loads (the Visual C++ runtime beside python.exe)")
def _msvc_wheel() -> str:
    # Wine's own copies of the runtime are off in every run (container/wine.py), so the
    # extension module finds vcruntime140.dll beside python.exe or fails as on Windows.
    name = TARGET["msvc_wheel"]
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(Path(__file__).with_name(name)) as wheel:
        wheel.extractall(tmp)
        (pyd,) = (p for p in Path(tmp).rglob("*.pyd"))
        assert b"vcruntime140.dll" in pyd.read_bytes().lower(), f"{pyd.name} does not import the VC runtime"
        module = ".".join(pyd.relative_to(tmp).with_suffix("").with_suffix("").parts)
        loaded = _python("-c", f"import {module} as m; print(m.__file__)", cwd=tmp)
        assert loaded.returncode == 0, loaded.stderr.strip().splitlines()[-1:] or loaded.returncode
        assert Path(loaded.stdout.strip()).name == pyd.name, loaded.stdout
    return f"{module} of {name}, importing vcruntime140.dll"


def tree_facts() -> TreeFacts:
    """What the shared checks need to know of a Windows tree checked under Wine."""
    return TreeFacts(
        builtin_required=BUILTIN_REQUIRED,
        not_importable=NOT_IMPORTABLE,
        tcl_library=Path(sys.base_prefix) / "tcl" / "tcl8.6",
        runner_limits=TARGET.get("limits", {}),
        runner="Wine",
    )


if __name__ == "__main__":
    sys.exit(run_checks(tree_facts()))
