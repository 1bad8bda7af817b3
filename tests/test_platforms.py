"""What differs between operating systems lives in pyfreight/platforms/, one module per
OS behind one interface: the flow compares no OS, binary format, libc or runner by name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from pyfreight.platforms import LAYOUTS, LINUX, MACOS, PLATFORMS, WINDOWS, platform_of
from pyfreight.targets import all_targets

PACKAGE = Path(__file__).resolve().parent.parent / "pyfreight"
# The names the flow would branch on: operating systems (as uv, Python and compilers
# spell them), binary and object formats, C libraries, runners, layouts.
OS_NAMES = {
    "linux", "windows", "macos", "darwin", "win32", "nt", "posix", "unix",
    "elf", "pe", "macho", "mach-o", "coff",
    "glibc", "musl", "ucrt",
    "native", "emulator", "wine", "unavailable",
}  # fmt: skip
# The modules that are one OS's or one format's by what they are: the platforms, the
# targets' data, one format's reader or rules, one OS's check-install, and the scripts
# an installed interpreter runs (which ask their own sys.platform).
PER_OS = (
    "platforms/",
    "targets.py",
    "in_container/",
    "formats/elf.py",
    "formats/pe.py",
    "formats/macho.py",
    "formats/macho_symbols.py",
    "verify/elf_rules.py",
    "verify/pe_rules.py",
    "verify/macho_rules.py",
    "runners/",
)


def _names_compared(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        for side in (node.left, *node.comparators):
            values = side.elts if isinstance(side, (ast.Tuple, ast.List, ast.Set)) else [side]
            for value in values:
                if isinstance(value, ast.Constant) and value.value in OS_NAMES:
                    found.append((node.lineno, value.value))
    return found


def test_the_checker_finds_a_comparison_on_an_os_name():
    code = 'if target.binary_format == "pe": pass\nif libc in ("musl", "x"): pass\nif a == b: pass'
    assert [name for _, name in _names_compared(ast.parse(code))] == ["pe", "musl"]


def test_no_module_outside_the_per_os_ones_compares_an_os_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(PER_OS):
            continue
        found += [f"{rel}:{line}: {name!r}" for line, name in _names_compared(ast.parse(path.read_text()))]
    assert not found, "ask pyfreight.platforms (platform_of(target)) instead:\n" + "\n".join(found)


TARGETS = sorted(all_targets().values(), key=lambda t: t.triple)


@pytest.mark.parametrize("target", TARGETS, ids=[t.triple for t in TARGETS])
def test_every_target_has_its_platform_and_the_layout_of_its_trees(target):
    platform = platform_of(target)
    assert platform is PLATFORMS[target.os]
    assert platform.binary_format == target.binary_format
    assert platform.layout in LAYOUTS


def test_the_platforms_answer_differently_where_the_oses_differ(tmp_path):
    assert WINDOWS.layout.interpreter(tmp_path) == "python.exe"
    (tmp_path / "lib" / "python3.14t").mkdir(parents=True)
    assert LINUX.layout.interpreter(tmp_path) == MACOS.layout.interpreter(tmp_path) == "bin/python3.14t"
    assert LINUX.whole_archive(Path("l.a"))[0] == "-Wl,--whole-archive"
    assert MACOS.whole_archive(Path("l.a")) == ["-Wl,-force_load,l.a"]
    assert WINDOWS.executable_extra_outputs(tmp_path) == [f"-Wl,--out-implib,{tmp_path / 'executable.lib'}"]
    assert LINUX.executable_extra_outputs(tmp_path) == MACOS.executable_extra_outputs(tmp_path) == []
    assert LINUX.blob_placement(tmp_path, "SECTIONS {}") == [f"-Wl,-T,{tmp_path / 'blob.ld'}"]
    assert (tmp_path / "blob.ld").read_text() == "SECTIONS {}"
    assert WINDOWS.blob_placement(tmp_path, "x") == []
