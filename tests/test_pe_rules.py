"""verify/pe_rules.py judges the facts formats/pe.py reads from Windows images: each
rule fails on a file made to break it, with one line naming the file. The real files
(the Windows tree) are read in the Windows part of test-all."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pyfreight.formats.manifest import PROGRAM_MANIFEST
from pyfreight.formats.pe import PeFacts, UnreadablePe, pe_facts
from pyfreight.targets import all_targets
from pyfreight.verify.pe_rules import build_paths_in, check_pe_tree, manifest_problems, pe_problems

WINDOWS = next(t for t in all_targets().values() if t.binary_format == "pe" and t.pe.machine == "AMD64")
ALLOWED = {name.lower() for name in WINDOWS.libc.needed} | {"python314.dll"}
GOOD_DLL = PeFacts(
    path="python314.dll",
    machine="AMD64",
    is_dll=True,
    imports=("KERNEL32.dll", "ole32.dll", "api-ms-win-crt-runtime-l1-1-0.dll"),
    exported=frozenset({"Py_Initialize", "PyList_New", "PyModule_Create2", "PyArg_ParseTuple"}),
    forwarded=frozenset(),
    flags=frozenset({"dynamic_base", "high_entropy_va", "nx_compat"}),
    timestamp=1785925789,
    debug_entries=0,
)


def test_a_good_image_has_no_problem_and_imports_match_without_case():
    assert pe_problems(GOOD_DLL, WINDOWS, ALLOWED) == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"machine": "ARM64"}, "machine ARM64, not AMD64 (x86_64-pc-windows-gnullvm)"),
        (
            {"imports": ("KERNEL32.dll", "libcrypto-3-x64.dll")},
            "imports DLLs outside the allow-list: libcrypto-3-x64.dll",
        ),
        ({"flags": frozenset({"nx_compat"})}, "lacks security flags: dynamic_base, high_entropy_va"),
        ({"debug_entries": 1}, "has a debug directory (1 entries): link it stripped"),
        (
            {"exported": GOOD_DLL.exported | {"SSL_new", "sqlite3_open"}},
            "exports symbols of bundled libraries: SSL_new, sqlite3_open",
        ),
        (
            {"exported": frozenset({"Py_Initialize"})},
            "does not export the C API extension modules need: "
            "PyList_New, PyModule_Create2, PyArg_ParseTuple",
        ),
    ],
)  # fmt: skip
def test_each_rule_fails_an_image_that_breaks_it(change, expected):
    assert pe_problems(replace(GOOD_DLL, **change), WINDOWS, ALLOWED) == [expected]


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"delay_imports": ("evil.dll",)}, "delay-loads DLLs outside the allow-list: evil.dll"),
        (
            {"bound_imports": ("KERNEL32.dll", "EVIL.DLL")},
            "names DLLs in its bound import directory outside the allow-list: EVIL.DLL",
        ),
        ({"forwarder_dlls": ("evil.dll",)}, "forwards exports to DLLs outside the allow-list: evil.dll"),
    ],
)
def test_every_way_of_loading_a_dll_is_judged_by_the_allow_list(change, expected):
    assert pe_problems(replace(GOOD_DLL, **change), WINDOWS, ALLOWED) == [expected]
    allowed = {"kernel32.dll", "evil.dll"} | ALLOWED
    assert pe_problems(replace(GOOD_DLL, **change), WINDOWS, allowed) == []


def test_a_forwarded_export_is_not_one_of_ours():
    """python3.dll forwards names to python3XX.dll; a forwarder holds no code."""
    forwarder = replace(
        GOOD_DLL,
        path="python3.dll",
        exported=frozenset({"SSL_new"}),
        forwarded=frozenset({"SSL_new"}),
        forwarder_dlls=("python314.dll",),
    )
    assert pe_problems(forwarder, WINDOWS, ALLOWED) == []


WINDOWS_10_OS = b'<supportedOS Id="{8e0f7a12-bfb3-4fe8-b9a5-48fd50a15a9a}"/>'
LONG_PATHS = b">true</longPathAware>"


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (None, ["has no manifest: Windows would tell it it runs on Windows 8 and refuse it long paths"]),
        (PROGRAM_MANIFEST.replace(WINDOWS_10_OS, b""),
         ["its manifest names no Windows after 8 (supportedOS): Windows would tell it it runs on 8"]),
        (PROGRAM_MANIFEST.replace(LONG_PATHS, b">false</longPathAware>"),
         ["its manifest is not longPathAware: paths past 260 characters would fail"]),
        (b'<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "xx">]><assembly>&x;</assembly>',
         ["its manifest declares a DTD, which no manifest needs"]),
        (b"<assembly", ["its manifest is no well-formed XML (unclosed token: line 1, column 0)"]),
        (b"<assembly/>",
         ["its manifest's top element is 'assembly', not urn:schemas-microsoft-com:asm.v1's assembly"]),
        (PROGRAM_MANIFEST, []),
    ],
)  # fmt: skip
def test_each_manifest_rule_fails_a_manifest_that_breaks_it(manifest, expected):
    """What CPython's python.exe declares, each part taken away (formats/manifest.py
    says what Windows does without it); XML with a DTD is never expanded."""
    assert manifest_problems(manifest) == expected
    program = replace(GOOD_DLL, path="python.exe", is_dll=False, exported=frozenset(), manifest=manifest)
    assert pe_problems(program, WINDOWS, ALLOWED) == expected
    assert pe_problems(replace(program, path="Scripts/tool.exe"), WINDOWS, ALLOWED) == []


def test_build_paths_are_found_narrow_and_wide():
    assert build_paths_in(b"...compiler: /sysroot/bin/zig-cc...") == ["names the build path /sysroot"]
    assert build_paths_in("C:/x;/build/work/y".encode("utf-16-le")) == ["names the build path /build/work"]
    assert build_paths_in(b"/usr/lib and C:\\Windows") == []


def test_a_file_named_like_an_image_that_is_none_and_a_broken_one_are_named(tmp_path: Path):
    """Windows loads readme.dll by its name whatever it holds: text there is named, as
    is an image that starts with MZ and goes no further."""
    (tmp_path / "readme.dll").write_bytes(b"not an image")
    broken = tmp_path / "sub" / "python314.dll"
    broken.parent.mkdir()
    broken.write_bytes(b"MZ" + b"\x00" * 62 + b"garbage")
    assert pe_facts(tmp_path / "readme.dll", tmp_path) is None
    with pytest.raises(UnreadablePe, match=r"^sub/python314.dll: not a readable PE image \("):
        pe_facts(broken, tmp_path)
    facts, problems = check_pe_tree(tmp_path, WINDOWS)
    assert facts == [] and len(problems) == 2
    assert problems[0] == "readme.dll: named like a PE image but is a text file"
    assert problems[1].startswith("sub/python314.dll: not a readable PE image (")


# A thin arm64 Mach-O header: the wrong format under a Windows name.
MACHO_BYTES = (0xFEEDFACF).to_bytes(4, "little") + (0x0100000C).to_bytes(4, "little") + bytes(24)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"MZ" + b"\xff" * 100, r"error: python\.exe: not a readable PE image \(.+\)"),
        (MACHO_BYTES, r"error: python\.exe: named like a PE image but is a Mach-O file"),
    ],
    ids=["broken-pe", "mach-o"],
)
def test_check_install_names_a_broken_python_exe_in_one_line(tmp_path: Path, content: bytes, said: str):
    """A tree from the internet may hold anything: an executable that is no PE image is
    named, with no traceback and before any container starts."""
    (tmp_path / "python.exe").write_bytes(content)
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("pyfreight")), "check-install", str(tmp_path), "--tests", "none"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and re.fullmatch(said, lines[0]), proc.stderr


def test_the_windows_targets_wine_limits_are_data_with_reasons():
    """A limit names a check a Windows tree runs (windows_checks.py's own or a shared
    one) and says why; none is left now that venv's copies take shutil's portable path
    under Wine."""
    folder = Path(__file__).parent.parent / "pyfreight/in_container"
    checks = "".join((folder / name).read_text() for name in ("windows_checks.py", "shared_checks.py"))
    names = set(re.findall(r'^@(?:check|_shared)\("([^"]+)"\)$', checks, re.M))
    assert "venv with pip installing a local wheel" in names and len(names) > 10
    assert set(WINDOWS.wine.limits) <= names, "a limit names no check"
    assert all(len(reason) > 20 for reason in WINDOWS.wine.limits.values())
    assert "venv with pip installing a local wheel" not in WINDOWS.wine.limits


@pytest.fixture(scope="module")
def vc_runtime_dll(tmp_path_factory) -> bytes:
    """Microsoft's vcruntime140.dll, out of the target's pinned msvc-runtime wheel (from
    the package index, verified by sha256): a real vendor image, debug directory and all."""
    from pyfreight.cpython.redistributable import vendor_files
    from pyfreight.paths import default_workspace

    assert WINDOWS.redistributable is not None
    return vendor_files(WINDOWS.redistributable, default_workspace().downloads, "AMD64")["vcruntime140.dll"]


def test_a_redistributed_dll_is_judged_by_its_pinned_hash_alone(tmp_path: Path, vc_runtime_dll: bytes):
    """Beside python.exe, the pinned bytes pass although Microsoft's image has a debug
    directory (our own rules would refuse it); one changed byte is named with the fix;
    the same file anywhere else is judged as our own."""
    (tmp_path / "vcruntime140.dll").write_bytes(vc_runtime_dll)
    facts, problems = check_pe_tree(tmp_path, WINDOWS)
    assert [f.path for f in facts] == ["vcruntime140.dll"] and problems == []

    changed = bytearray(vc_runtime_dll)
    changed[-100] ^= 0xFF
    (tmp_path / "vcruntime140.dll").write_bytes(bytes(changed))
    _, problems = check_pe_tree(tmp_path, WINDOWS)
    assert len(problems) == 1 and re.fullmatch(
        r"vcruntime140\.dll: sha256 [0-9a-f]{16}… is not the pinned d5e4d9a3e835fa67… "
        r"\(targets/x86_64-pc-windows-gnullvm\.yaml pe\.redistributed\): ship the file of the pinned wheel "
        r"unmodified",
        problems[0],
    ), problems

    (tmp_path / "vcruntime140.dll").unlink()
    (tmp_path / "DLLs").mkdir()
    (tmp_path / "DLLs" / "vcruntime140.dll").write_bytes(vc_runtime_dll)
    _, problems = check_pe_tree(tmp_path, WINDOWS)
    assert any(p.startswith("DLLs/vcruntime140.dll: has a debug directory") for p in problems), problems


def _with_machine(image: bytes, machine: int) -> bytes:
    """The image with its COFF header's machine field changed (after the PE signature the
    e_lfanew at 0x3c points to), as a copy of another architecture's file would have."""
    changed = bytearray(image)
    machine_at = int.from_bytes(image[0x3C:0x40], "little") + 4
    changed[machine_at : machine_at + 2] = machine.to_bytes(2, "little")
    return bytes(changed)


def test_a_redistributed_dll_of_another_architecture_is_named_by_its_machine(tmp_path: Path, vc_runtime_dll):
    """A VC runtime for ARM64 beside an x64 python.exe is one line that names the machine,
    not a hash mismatch that hides why Windows would refuse to load it."""
    (tmp_path / "vcruntime140.dll").write_bytes(_with_machine(vc_runtime_dll, 0xAA64))
    _, problems = check_pe_tree(tmp_path, WINDOWS)
    assert problems == [
        "vcruntime140.dll: machine ARM64, not AMD64 (x86_64-pc-windows-gnullvm): a vendor's DLL of another "
        "architecture, which Windows refuses to load; ship the pinned wheel's file"
    ]


def test_the_build_refuses_a_pinned_vendor_dll_of_another_machine(tmp_path: Path):
    """PyPI's msvc-runtime wheel for win32 holds the x64 runtime (checked for 14.34 to
    14.51): pinned by hash for a 32-bit target, its vcruntime140.dll is refused with what
    it is, before any tree holds it."""
    from pyfreight.cpython.redistributable import vendor_files
    from pyfreight.errors import PyfreightError
    from pyfreight.paths import default_workspace
    from pyfreight.sources.recipes import PypiLocation, Source

    assert WINDOWS.redistributable is not None
    win32_wheel = Source(
        file="msvc_runtime-14.44.35112-cp311-cp311-win32.whl",
        sha256="438a584930820238141162ef9b92bd8099ccca62a67fa0ddef63ed88b8eb4e0d",
        size=1921504,
        urls=(),
        debian=None,
        pypi=PypiLocation(project="msvc-runtime", version="14.44.35112"),
    )
    member = "msvc_runtime-14.44.35112.data/data/Scripts/vcruntime140.dll"
    mislabelled = replace(
        WINDOWS.redistributable,
        wheel=win32_wheel,
        members={"vcruntime140.dll": member},
        sha256={"vcruntime140.dll": "d5e4d9a3e835fa679450145d6a7d94e36573a509317111904d9b3712c30d9066"},
    )
    with pytest.raises(PyfreightError) as refused:
        vendor_files(mislabelled, default_workspace().downloads, "I386")
    assert str(refused.value) == (
        f"msvc_runtime-14.44.35112-cp311-cp311-win32.whl: {member} is for AMD64, not I386: "
        "pin a file of the target's machine (targets/*.yaml pe.redistributed)"
    )


def test_a_32_bit_image_is_asked_no_64_bit_aslr():
    """PE32 has no high-entropy ASLR to ask for: a 32-bit x86 target's image lacking it
    passes, and the same image lacking ASLR altogether does not."""
    (i686,) = [t for t in all_targets().values() if t.binary_format == "pe" and t.pe.machine == "I386"]
    image = replace(GOOD_DLL, machine="I386", flags=frozenset({"dynamic_base", "nx_compat"}))
    assert pe_problems(image, i686, ALLOWED) == []
    no_aslr = replace(image, flags=frozenset({"nx_compat"}))
    assert pe_problems(no_aslr, i686, ALLOWED) == ["lacks security flags: dynamic_base"]
