"""`pyfreight validate` on deliberately broken archives: each fault is reported, with
the member it concerns. (A real archive passing every check is proven by the
container test of the distribution.)"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from pyfreight.formats.elf import elf_facts
from pyfreight.targets import all_targets, default_target
from pyfreight.verify.exports import REQUIRED_EXPORTS
from pyfreight.verify.validate import _build_path_problems, _elf_problems, _interpreter_problems, validate

HOST_BINARY = Path(shutil.which("ls") or "/bin/ls")  # built against the host's newer glibc


def _archive(path: Path, files: dict[str, bytes | str], symlinks: dict[str, str] | None = None) -> Path:
    """A .tar.gz with `files` (name -> content) and `symlinks` (name -> target), in
    the given order."""
    with tarfile.open(path, "w:gz") as tar:
        for name, content in files.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o755
            tar.addfile(info, io.BytesIO(data))
        for name, target in (symlinks or {}).items():
            info = tarfile.TarInfo(name)
            info.type = tarfile.SYMTYPE
            info.linkname = target
            tar.addfile(info)
    return path


def _messages(problems) -> list[str]:
    return [str(p) for p in problems]


def _has(problems, member: str, text: str) -> bool:
    return any(p.member == member and text in p.message for p in problems)


def test_wrong_first_member_and_unexpected_entry(tmp_path):
    archive = _archive(
        tmp_path / "cpython-3.14.7+20261012-x86_64-unknown-linux-gnu-noopt-full.tar.gz",
        {"python/install/README": "x", "python/PYTHON.json": "{}", "python/extra.txt": "x"},
    )
    problems = validate(archive)
    assert _has(problems, "python/install/README", "first member must be python/PYTHON.json"), _messages(
        problems
    )
    assert _has(problems, "python/extra", "unexpected entry") or _has(
        problems, "python/extra.txt", "unexpected"
    )


def test_bad_json_is_reported(tmp_path):
    archive = _archive(tmp_path / "x-full.tar.gz", {"python/PYTHON.json": "{not json"})
    problems = validate(archive)
    assert _has(problems, "python/PYTHON.json", "not valid JSON"), _messages(problems)


def test_missing_object_and_schema_errors(tmp_path):
    document = {"version": "8", "build_info": {"core": {"objs": ["build/Objects/object.o"], "links": []}}}
    archive = _archive(tmp_path / "x-full.tar.gz", {"python/PYTHON.json": json.dumps(document)})
    problems = validate(archive)
    assert _has(problems, "python/build/Objects/object.o", "not in the archive"), _messages(problems)
    assert _has(problems, "python/PYTHON.json", "is a required property")
    assert _has(problems, "python/licenses/sbom.cdx.json", "missing")


def test_too_new_glibc_and_missing_c_api(tmp_path):
    archive = _archive(
        tmp_path / "x-install_only.tar.gz",
        {"python/bin/python3.14": HOST_BINARY.read_bytes()},
        {"python/bin/python3": "python3.14", "python/bin/python": "python3.14"},
    )
    problems = validate(archive)
    ceiling = default_target().libc.ceiling_text
    assert _has(problems, "python/bin/python3.14", f"newer than {ceiling} allowed"), _messages(problems)
    assert _has(problems, "python/bin/python3.14", "does not export the C API")


@pytest.mark.parametrize(
    ("name", "target", "expected"),
    [
        ("python/../evil", None, "escapes the archive"),
        ("/python/evil", None, "an absolute path"),
        ("python/bin/escape", "../../../etc/passwd", "a symlink that leaves the archive"),
        ("python/bin/abs", "/etc/passwd", "a symlink to an absolute path"),
    ],
)
def test_escaping_paths_and_links(tmp_path, name, target, expected):
    files = {} if target else {name: "x"}
    archive = _archive(
        tmp_path / "x-install_only.tar.gz",
        {"python/bin/ok": "x", **files},
        {name: target} if target else None,
    )
    problems = validate(archive)
    assert _has(problems, name, expected), _messages(problems)


SHARED_EXTENSION = "python/lib/python3.14/lib-dynload/_foo.cpython-314-x86_64-linux-gnu.so"


def test_leaked_build_path_and_shared_extension(tmp_path):
    archive = _archive(
        tmp_path / "x-install_only.tar.gz",
        {
            "python/lib/python3.14/_sysconfigdata.py": "CC = 'clang -I/tools/deps/include'\n",
            SHARED_EXTENSION: HOST_BINARY.read_bytes(),
            "python/bin/python3.14": "#!/bin/sh\n",
        },
        {"python/bin/python3": "python3.14", "python/bin/python": "python3"},
    )
    problems = validate(archive)
    member = "python/lib/python3.14/_sysconfigdata.py"
    assert _has(problems, member, "build-time path"), _messages(problems)
    assert _has(
        problems, "python/lib/python3.14/lib-dynload/_foo.cpython-314-x86_64-linux-gnu.so", "shared library"
    )


def test_python_symlinks_must_agree(tmp_path):
    archive = _archive(
        tmp_path / "x-install_only.tar.gz",
        {"python/bin/python3.14": "a", "python/bin/python3.13": "b"},
        {"python/bin/python3": "python3.14", "python/bin/python": "python3.13"},
    )
    problems = validate(archive)
    assert _has(problems, "python/bin/python", "different interpreters"), _messages(problems)


def _tree_with(tmp_path: Path, binary: Path) -> Path:
    install = tmp_path / "install"
    (install / "bin").mkdir(parents=True)
    shutil.copy(binary, install / "bin" / "python3.14")
    (install / "bin" / "python3").symlink_to("python3.14")
    return install


@pytest.mark.parametrize(("flags", "pie"), [(["-no-pie"], False), (["-fPIE", "-pie"], True)])
def test_interpreter_hardening_follows_the_build_options(tmp_path, flags, pie):
    """A stack protector and _FORTIFY_SOURCE leave calls of glibc's checking functions
    in the executable; it is a PIE exactly when the build options say so."""
    source = tmp_path / "main.c"
    source.write_text(
        "#include <stdio.h>\n#include <string.h>\n"
        "int main(int argc, char **argv) { char b[64]; strcpy(b, argv[0]); puts(b); return argc; }\n"
    )
    hardened, plain = tmp_path / "hardened", tmp_path / "plain"
    common = ["gcc", "-O2", str(source), *flags]
    subprocess.run([*common, "-fstack-protector-all", "-D_FORTIFY_SOURCE=2", "-o", hardened], check=True)
    subprocess.run([*common, "-fno-stack-protector", "-U_FORTIFY_SOURCE", "-o", plain], check=True)

    good = _tree_with(tmp_path / "a", hardened)
    assert _interpreter_problems(good, "python/install", "noopt+pie" if pie else "noopt") == []
    wrong = "noopt" if pie else "noopt+pie"
    mismatch = _messages(_interpreter_problems(good, "python/install", wrong))
    e_type, should = ("ET_DYN", "position-dependent (not a PIE)") if pie else ("ET_EXEC", "a PIE")
    assert mismatch == [
        f"python/install/bin/python3.14: is {e_type}, but build options {wrong} make it {should}"
    ]
    bare = _messages(_interpreter_problems(_tree_with(tmp_path / "b", plain), "python/install", None))
    assert any("no stack protector" in m for m in bare) and any("no _FORTIFY_SOURCE" in m for m in bare)


def test_fortify_is_asked_of_glibc_interpreters_only_and_nothing_of_static_ones(tmp_path):
    """musl has no checking functions (__*_chk) to call; a static interpreter imports
    nothing at all, so neither check can see anything in it."""
    source = tmp_path / "main.c"
    source.write_text('#include <stdio.h>\nint main(void) { puts("x"); return 0; }\n')
    protected, static = tmp_path / "protected", tmp_path / "static"
    subprocess.run(
        ["gcc", "-O2", "-fstack-protector-all", "-U_FORTIFY_SOURCE", str(source), "-o", protected], check=True
    )
    subprocess.run(["gcc", "-O2", "-static", "-fno-stack-protector", str(source), "-o", static], check=True)
    tree = _tree_with(tmp_path / "p", protected)
    musl = next(t for t in all_targets().values() if t.libc.name == "musl")
    assert _messages(_interpreter_problems(tree, "python/install", None, musl)) == []
    glibc = _messages(_interpreter_problems(tree, "python/install", None, default_target()))
    assert len(glibc) == 1 and "no _FORTIFY_SOURCE" in glibc[0]
    assert _interpreter_problems(_tree_with(tmp_path / "s", static), "python/install", None) == []


def test_objects_of_the_full_archive_are_held_to_the_ceiling(tmp_path):
    """A packer links the full archive's objects on its own machine: an object (or a
    static library member) that asks for a glibc symbol version above the ceiling is
    named, an older one is not."""
    source = tmp_path / "m.c"
    source.write_text(
        '__asm__(".symver exp, exp@GLIBC_2.29");\n'
        '__asm__(".symver log, log@GLIBC_2.2.5");\n'
        "double exp(double); double log(double);\n"
        "double f(double x) { return exp(x) + log(x); }\n"
    )
    subprocess.run(["cc", "-c", str(source), "-o", str(tmp_path / "m.o")], check=True)
    subprocess.run(["ar", "rcD", str(tmp_path / "libm1.a"), str(tmp_path / "m.o")], check=True)
    archive = _archive(
        tmp_path / "x-full.tar.gz",
        {
            "python/PYTHON.json": "{}",
            "python/build/Objects/m.o": (tmp_path / "m.o").read_bytes(),
            "python/build/lib/libm1.a": (tmp_path / "libm1.a").read_bytes(),
        },
    )
    problems = validate(archive)
    ceiling = default_target().libc.ceiling_text
    assert _has(problems, "python/build/Objects/m.o", f"refers to exp@GLIBC_2.29, newer than {ceiling}")
    assert _has(problems, "python/build/lib/libm1.a(m.o)", "refers to exp@GLIBC_2.29"), _messages(problems)
    assert not any("log@" in p.message for p in problems)


def test_crt_features_must_say_what_the_tree_needs(tmp_path):
    document = {"crt_features": ["glibc-dynamic", "glibc-max-symbol-version:2.17"]}
    archive = _archive(
        tmp_path / "x-full.tar.gz",
        {
            "python/PYTHON.json": json.dumps(document),
            "python/install/bin/python3.14": HOST_BINARY.read_bytes(),
        },
        {"python/install/bin/python3": "python3.14", "python/install/bin/python": "python3.14"},
    )
    problems = validate(archive, target=default_target().triple)
    said = (
        "crt_features say ['glibc-dynamic', 'glibc-max-symbol-version:2.17'], but the tree's ELF files need"
    )
    assert _has(problems, "python/PYTHON.json", said), _messages(problems)


def test_a_static_interpreter_exports_nothing_but_its_sbom_names_the_c_library(tmp_path):
    """A fully static interpreter loads no extension module, so it owes no C API
    exports; it carries the C library's code, so the SBOM must name that library (musl
    for the musl target), and then the license rule asks for its license text."""
    source = tmp_path / "p.c"
    source.write_text("int main(void) { return 0; }\n")
    static = tmp_path / "static"
    subprocess.run(["gcc", "-O2", "-static", str(source), "-o", static], check=True)

    def problems_with(components: list[str]) -> list:
        sbom = {"components": [{"name": name} for name in components]}
        archive = _archive(
            tmp_path / f"x{len(components)}-full.tar.gz",
            {
                "python/PYTHON.json": json.dumps({"crt_features": ["static"]}),
                "python/licenses/sbom.cdx.json": json.dumps(sbom),
                "python/install/bin/python3.14": static.read_bytes(),
            },
            {"python/install/bin/python3": "python3.14", "python/install/bin/python": "python3.14"},
        )
        return validate(archive, target="x86_64-unknown-linux-musl")

    without = problems_with(["cpython"])
    assert _has(without, "python/licenses/sbom.cdx.json", "names no musl"), _messages(without)
    assert not any("C API" in p.message for p in without), _messages(without)
    named = problems_with(["cpython", "musl"])
    assert not any("names no musl" in p.message for p in named), _messages(named)
    assert _has(named, "python/licenses/musl/", "no license text"), _messages(named)


def test_shared_objects_are_held_to_the_hardening_and_export_rules(tmp_path):
    """The rules over what formats/elf.py reads: a non-executable stack, RELRO, BIND_NOW,
    no text relocations and no exported symbols of bundled libraries. A library linked
    with each of them broken is named for every one; the same code linked hardened is not."""
    source = tmp_path / "m.c"
    # an absolute address in .text: with -z notext its relocation is applied to the text
    absolute = '__asm__(".text\\n.quad counter\\n");\n'
    source.write_text("int counter;\nint SSL_new_fake(void) { return ++counter; }\n" + absolute)
    loose, hardened = tmp_path / "loose.so", tmp_path / "hardened.so"
    common = ["gcc", "-shared", "-O2", str(source)]
    subprocess.run(
        [*common, "-fPIC", "-Wl,-z,execstack,-z,norelro,-z,lazy,-z,notext", "-o", loose], check=True
    )
    source.write_text("int counter;\nint SSL_new_fake(void) { return ++counter; }\n")
    subprocess.run([*common, "-fPIC", "-Wl,-z,noexecstack,-z,relro,-z,now", "-o", hardened], check=True)
    target = default_target()
    found = _messages(
        _elf_problems(
            loose, "python/install/lib/loose.so", target, elf_facts(loose, tmp_path), target.libc.needed
        )
    )
    for expected in (
        "executable stack",
        "no RELRO segment",
        "no BIND_NOW",
        "text relocations",
        "exports symbols of bundled libraries",
    ):
        assert any(expected in m for m in found), (expected, found)
    good = _messages(
        _elf_problems(
            hardened,
            "python/install/lib/hardened.so",
            target,
            elf_facts(hardened, tmp_path),
            target.libc.needed,
        )
    )
    assert good == ["python/install/lib/hardened.so: exports symbols of bundled libraries: SSL_new_fake"]


def test_a_file_larger_than_ours_is_named_and_not_read(tmp_path):
    """relocate's search for build paths reads files whole: a sparse file of gigabytes is
    named by its size instead (in an archive the byte caps stop it first)."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "big.txt").touch()
    os.truncate(tmp_path / "lib" / "big.txt", 6 << 30)
    (tmp_path / "lib" / "ok.txt").write_text("/tools/deps is where it was built\n")
    problems = _build_path_problems(tmp_path, "python/install")
    assert [str(p) for p in problems] == [
        "python/install/lib/big.txt: 6442450944 bytes, larger than any file of ours (256 MiB)"
    ]
    (tmp_path / "lib" / "big.txt").unlink()
    assert [p.member for p in _build_path_problems(tmp_path, "python/install")] == [
        "python/install/lib/ok.txt"
    ]


def test_an_objects_symbol_name_that_is_not_utf8_is_named_in_every_format(tmp_path):
    """Packers read the full archive's symbol names as text: an ELF object (and a static
    library's member) naming a symbol in bytes that are not UTF-8 is named, as COFF and
    Mach-O ones are (tests/test_pe_reader.py, tests/test_macho_reader.py)."""
    marker = b"Py_Marker_XXXXXXXX"
    source = tmp_path / "m.c"
    source.write_text(f"int {marker.decode()}(void) {{ return 7; }}\n")
    subprocess.run(["cc", "-c", str(source), "-o", str(tmp_path / "m.o")], check=True)
    data = (tmp_path / "m.o").read_bytes()
    assert marker in data
    bad = data.replace(marker, b"Py_Marker_\xff\xfe\xc0\xaf\x80\x81\x82\x83")
    (tmp_path / "m.o").write_bytes(bad)
    subprocess.run(["ar", "rcD", str(tmp_path / "libm1.a"), str(tmp_path / "m.o")], check=True)
    archive = _archive(
        tmp_path / "x-full.tar.gz",
        {
            "python/PYTHON.json": "{}",
            "python/build/Objects/m.o": bad,
            "python/build/Objects/good.o": data,
            "python/build/lib/libm1.a": (tmp_path / "libm1.a").read_bytes(),
        },
    )
    problems = [p for p in validate(archive) if "UTF-8" in p.message]
    assert [p.member for p in problems] == ["python/build/Objects/m.o", "python/build/lib/libm1.a(m.o)"]
    assert problems[0].message.endswith(
        "'s name (Py_Marker_\\xff\\xfe\\xc0\\xaf\\x80\\x81\\x82\\x83) is not UTF-8, as packers read the names"
    )


def _gcc(tmp_path: Path, out: str, source: str, *flags: str) -> Path:
    (tmp_path / f"{out}.c").write_text(source)
    hardened = ["-fPIC", "-shared", "-Wl,-z,noexecstack,-z,relro,-z,now"]
    subprocess.run(
        ["gcc", *hardened, str(tmp_path / f"{out}.c"), "-o", str(tmp_path / out), *flags], check=True
    )
    return tmp_path / out


def test_a_hostile_libpython_is_refused_a_line_for_each_fault(tmp_path):
    """A libpython3.14.so.1.0 that exports SSL_new beside the C API, needs a library
    neither the system nor the tree has, and searches a folder outside the tree: validate
    names each in one line, for the console script as for the function; the library
    beside it that needs the tree's own libpython (libpython3.so) is not faulted."""
    evil = _gcc(tmp_path, "libevil.so", "int evil(void) { return 1; }\n", "-Wl,-soname,libevil.so.1")
    api = "".join(f"int {name}(void) {{ return 0; }}\n" for name in REQUIRED_EXPORTS)
    hostile = _gcc(
        tmp_path,
        "libpython3.14.so.1.0",
        api + "int evil(void); int SSL_new(void) { return evil(); }\nint helper_leak(void) { return 2; }\n",
        "-Wl,-soname,libpython3.14.so.1.0",
        str(evil),
        "-Wl,-rpath,/opt/evil:$ORIGIN/../lib",
    )
    stable = _gcc(
        tmp_path, "libpython3.so", "", "-Wl,-soname,libpython3.so", "-Wl,--no-as-needed", str(hostile)
    )
    archive = _archive(
        tmp_path / "x-install_only.tar.gz",
        {
            "python/lib/libpython3.14.so.1.0": hostile.read_bytes(),
            "python/lib/libpython3.so": stable.read_bytes(),
            "python/bin/python3.14": HOST_BINARY.read_bytes(),
        },
        {"python/bin/python3": "python3.14", "python/bin/python": "python3.14"},
    )
    problems = [p for p in validate(archive) if p.member.startswith("python/lib/")]
    member = "python/lib/libpython3.14.so.1.0"
    assert _has(problems, member, "needs libraries outside the allow-list: libevil.so.1"), _messages(problems)
    assert _has(problems, member, "exports symbols of bundled libraries: SSL_new")
    assert _has(problems, member, "libpython exports names outside the C API: SSL_new, helper_leak")
    assert _has(problems, member, "searches '/opt/evil' for libraries, outside the tree")
    assert not _has(problems, member, "$ORIGIN/../lib"), _messages(problems)
    assert not [p for p in problems if p.member == "python/lib/libpython3.so"], _messages(problems)
    cli = subprocess.run(
        [str(Path(__file__).parents[1] / ".venv" / "bin" / "pyfreight"), "validate", str(archive)],
        capture_output=True,
        text=True,
    )
    assert cli.returncode != 0 and "Traceback" not in cli.stderr
    lines = (cli.stdout + cli.stderr).splitlines()
    assert any(member in line and "/opt/evil" in line for line in lines), lines
    assert any(member in line and "libevil.so.1" in line for line in lines), lines


def test_a_libpython_exporting_its_init_and_fini_as_musls_crti_makes_them_passes(tmp_path):
    """musl's crti.o defines _init and _fini global in every shared library (glibc's are
    hidden): a musl libpython exports them beside the C API, and libpython3.so exports
    them alone. Neither is another name of libpython's objects."""
    init_fini = "void _init(void) {}\nvoid _fini(void) {}\n"
    api = "".join(f"int {name}(void) {{ return 0; }}\n" for name in REQUIRED_EXPORTS)
    versioned = _gcc(
        tmp_path, "libpython3.14.so.1.0", api + init_fini, "-nostartfiles", "-Wl,-soname,libpython3.14.so.1.0"
    )
    stable = _gcc(
        tmp_path, "libpython3.so", init_fini, "-nostartfiles", "-Wl,-soname,libpython3.so",
        "-Wl,--no-as-needed", str(versioned),
    )  # fmt: skip
    archive = _archive(
        tmp_path / "x-install_only.tar.gz",
        {
            "python/lib/libpython3.14.so.1.0": versioned.read_bytes(),
            "python/lib/libpython3.so": stable.read_bytes(),
            "python/bin/python3.14": HOST_BINARY.read_bytes(),
        },
        {"python/bin/python3": "python3.14", "python/bin/python": "python3.14"},
    )
    problems = [p for p in validate(archive) if p.member.startswith("python/lib/")]
    assert not [p for p in problems if "C API" in p.message], _messages(problems)
