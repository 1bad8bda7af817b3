"""cpython/windows_projects.py: the Makefile of the Windows build, written from the
pinned CPython's own PCbuild projects and windows/projects.yaml."""

from __future__ import annotations

import re
import tarfile

import pytest

from pyfreight.cpython.build import CPYTHON_PATCHES_DIR, patches_for
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.versions import cpython_source
from pyfreight.cpython.windows_projects import (
    CONFIG_C,
    EXTERNALS_DIR,
    PCBuild,
    build_info,
    builtin_config,
    builtin_extensions,
    dll_parts,
    field3_value,
    link_libraries,
    load_settings,
    makefile,
    read_pcbuild,
)
from pyfreight.errors import PyfreightError
from pyfreight.formats.msbuild import read_project
from pyfreight.formats.tarball import read_member
from pyfreight.paths import default_workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import all_targets, default_target

WINDOWS = next(t for t in all_targets().values() if t.toolchain.cpython_build == "visual-studio-projects")
SOURCE = cpython_source(None)
INNER = f"/build/work/{SOURCE.top_dir}"


@pytest.fixture(scope="module")
def pcbuild(tmp_path_factory):
    tarball = fetch_source(SOURCE.source, default_workspace().downloads, log=lambda m: None)
    root = read_pcbuild(tarball, SOURCE.top_dir, tmp_path_factory.mktemp("pcbuild"))
    assert not (root / "Lib").exists()  # only the project files are unpacked
    return tarball, root


@pytest.fixture(scope="module")
def projects(pcbuild):
    return PCBuild(pcbuild[1], WINDOWS, SOURCE.version, INNER, disable_gil=False)


@pytest.fixture(scope="module")
def extensions(projects):
    return builtin_extensions(projects)


@pytest.fixture(scope="module")
def parts(projects, extensions):
    return dll_parts(projects, extensions)


@pytest.fixture(scope="module")
def rules(projects, parts) -> str:
    return makefile(projects, parts)


def _recipe(rules: str, target: str) -> str:
    match = re.search(rf"^{re.escape(target)}:.*\n((?:\t.*\n)+)", rules, re.M)
    assert match, f"no rule for {target}"
    return match.group(1)


def test_every_pythoncore_source_is_compiled_with_the_projects_definitions(rules):
    objects = re.findall(r"^(obj/pythoncore/\S+\.o): (\S+)$", rules, re.M)
    assert len(objects) > 200
    sources = {source for _, source in objects}
    assert f"{INNER}/PCbuild/../Python/ceval.c" in sources
    assert f"{INNER}/PCbuild/../Modules/zlibmodule.c" in sources  # IncludeExternals: zlib built in
    ceval = _recipe(rules, "obj/pythoncore/Python/ceval.o")
    assert "-DPy_BUILD_CORE_BUILTIN" in ceval and "'-DPY3_DLLNAME=L\"python3\"'" in ceval
    assert f"-I{INNER}/Include/internal" in ceval and "-I/tools/deps/include" in ceval


def test_per_file_flags_of_the_settings_reach_their_file_only(rules):
    settings = load_settings()["source_flags"]
    posix = _recipe(rules, "obj/pythoncore/Modules/posixmodule.o")
    assert all(flag in posix.split() for flag in settings["posixmodule.c"]["flags"] if flag.startswith("-D"))
    assert "-DHAVE_SYSTEM" not in _recipe(rules, "obj/pythoncore/Python/ceval.o")
    assert "'-DDATE=\"$(BUILD_DATE)\"'" in _recipe(rules, "obj/pythoncore/Modules/getbuildinfo.o")


def test_the_dll_links_mingw_names_of_the_projects_libraries_and_the_programs_link_it(rules):
    dll = f"python{SOURCE.minor.replace('.', '')}"
    link = _recipe(rules, f"{dll}.dll")
    assert f"-Wl,--out-implib,libs/{dll}.lib" in link
    assert "-lapi-ms-win-core-path-l1-1-0" in link and "-lpathcch" not in link  # pathcch.lib's API set
    assert "-lz" in link and "-lzlib-ng" not in link and "-lws2_32" in link
    assert "-municode" in _recipe(rules, "python.exe") and "-mwindows" in _recipe(rules, "pythonw.exe")
    assert f"libs/{dll}.lib" in _recipe(rules, "python.exe")


def test_a_windows_only_patch_is_staged_for_windows_builds_only():
    noopt = BuildOptions.parse("noopt")
    windows = patches_for(SOURCE, noopt, WINDOWS)
    linux = patches_for(SOURCE, noopt, default_target())
    only_windows = set(windows) - set(linux)
    said_windows = {
        f"patches/{p.name}"
        for p in CPYTHON_PATCHES_DIR.glob("*.patch")
        if "\nOS: windows\n" in p.read_text() and SOURCE.minor in p.read_text().splitlines()[1].split()
    }
    assert len(said_windows) >= 7 and only_windows == said_windows
    assert set(linux) <= set(windows)


def test_the_settings_file_is_read_through_its_schema():
    settings = load_settings()
    assert settings["dll_projects"] == ["pythoncore"] and settings["libraries"]["zlib-ng"] == "z"
    assert all(len(entry["why"]) > 10 for entry in settings["source_flags"].values())


def test_only_project_files_are_unpacked(tmp_path):
    tarball = fetch_source(SOURCE.source, default_workspace().downloads, log=lambda m: None)
    root = read_pcbuild(tarball, SOURCE.top_dir, tmp_path)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".props", ".vcxproj", ".proj") for p in files)
    with tarfile.open(tarball) as tar:
        assert any(m.name.endswith("PCbuild/pythoncore.vcxproj") for m in tar)


def test_every_extension_pcbuild_builds_is_built_into_the_dll_but_those_left_out(extensions, rules):
    """pcbuild.proj's ExtensionModules, and _socket, which only _ssl's project reference
    brings in; _wmi is left out by the settings, with why."""
    excluded = load_settings()["builtin_extensions"]["excluded"]
    assert {"_ssl", "_hashlib", "_sqlite3", "_ctypes", "_lzma", "_bz2", "_zstd", "pyexpat"} <= set(extensions)
    assert "_socket" in extensions and "select" in extensions and "unicodedata" in extensions
    assert set(excluded) == {"_wmi"} and not set(excluded) & set(extensions)
    assert not any(name.startswith("_test") or name.startswith("xxlimited") for name in extensions)
    prerequisites = re.search(rf"^python{SOURCE.minor.replace('.', '')}\.dll: (.*)$", rules, re.M)
    assert prerequisites is not None
    for name in extensions:
        assert f" obj/{name}/" in prerequisites.group(1), f"{name} is not linked into the DLL"
    socket = _recipe(rules, "obj/_socket/Modules/socketmodule.o")
    assert "-DPy_BUILD_CORE_BUILTIN" in socket


def test_tkinter_links_our_static_tcl_and_tk_as_their_headers_are_told(rules):
    """_tkinter.vcxproj links tcl86t.lib and tk86t.lib, Tcl/Tk's DLLs; the DLL links our
    recipes' static libraries instead, _tkinter compiles with STATIC_BUILD (no dllimport
    of Tcl's functions), and no build machine's Tcl folder (Py_TCLTK_DIR, which the
    projects define outside release builds) is compiled in."""
    tkinter = _recipe(rules, "obj/_tkinter/Modules/_tkinter.o")
    assert "-DSTATIC_BUILD" in tkinter and "-DWITH_APPINIT" in tkinter
    assert "Py_TCLTK_DIR" not in rules and "tcltk" not in rules
    link = _recipe(rules, f"python{SOURCE.minor.replace('.', '')}.dll").split()
    for word in ("-ltcl86", "-ltk86", "-ltclstub86", "-ltkstub86", "-lcomctl32", "-limm32"):
        assert word in link, word
    assert "-ltcl86t" not in link and "-lX11" not in link


def test_a_librarys_own_sources_come_from_our_recipes(rules, parts):
    """What the projects compile from $(ExternalsDir) or from CPython's copies of expat
    and libmpdec is our recipes' libraries instead, linked as cpython/extensions.yaml
    says (the same fact as on Linux); the Unix-only libuuid is not, _uuid links rpcrt4."""
    assert EXTERNALS_DIR not in rules
    assert "/Modules/expat/" not in rules and "Modules/_decimal/windows" not in rules
    assert "libmpdec" not in rules and "bzip2-1.0.8" not in rules
    link = _recipe(rules, f"python{SOURCE.minor.replace('.', '')}.dll").split()
    for library in (
        "-lssl",
        "-lcrypto",
        "-lsqlite3",
        "-lffi",
        "-llzma",
        "-lbz2",
        "-lzstd",
        "-lexpat",
        "-lmpdec",
    ):
        assert library in link, library
    assert "-lrpcrt4" in link and "-llibffi-8" not in link
    # -luuid in the DLL's line is Windows' COM interface ids, which Tk links
    uuid_links = next(p for p in parts if p.name == "_uuid").links
    assert "-lrpcrt4" in uuid_links and "-luuid" not in uuid_links


def test_the_builtin_table_gains_each_extension(pcbuild, extensions):
    tarball, _ = pcbuild
    original = read_member(tarball, f"{SOURCE.top_dir}/{CONFIG_C}").decode()
    table = builtin_config(original, list(extensions))
    for name in extensions:
        assert f"extern PyObject* PyInit_{name}(void);" in table
        assert f'{{"{name}", PyInit_{name}}},' in table
    assert table.index('{"_ssl", PyInit__ssl}') < table.index("/* Sentinel */")
    with pytest.raises(PyfreightError, match="ADDMODULE markers"):
        builtin_config(original.replace("ADDMODULE MARKER 2", "marker"), ["_ssl"])


def test_a_project_linking_an_unknown_library_is_refused(tmp_path):
    """Project files come from a source archive: a library that is neither one of the
    target's system libraries nor built by a recipe is refused by name, never linked."""
    project = tmp_path / "PCbuild" / "_evil.vcxproj"
    project.parent.mkdir()
    project.write_text(
        '<Project xmlns="http://schemas.microsoft.com/developer/msbuild/2003">'
        "<ItemDefinitionGroup><Link><AdditionalDependencies>"
        "ws2_32.lib;..\\..\\outside\\evil.lib;%(AdditionalDependencies)"
        "</AdditionalDependencies></Link></ItemDefinitionGroup></Project>"
    )
    read = read_project(project, {}, tmp_path)
    with pytest.raises(PyfreightError, match=r"_evil.vcxproj links .*evil.lib, which is neither"):
        link_libraries(read, WINDOWS)


def test_the_programs_and_python3_dll_come_from_their_projects(rules):
    """python3.dll forwards the stable ABI (its MSVC pragmas need -fms-extensions);
    the venv launchers are built, the windowed ones as Windows-subsystem programs."""
    outputs = rules.splitlines()[1].split()
    assert outputs[1:] == [
        "python314.dll",
        "python.exe",
        "pythonw.exe",
        "venvlauncher.exe",
        "venvwlauncher.exe",
        "python3.dll",
    ]
    assert "-mwindows" in _recipe(rules, "venvwlauncher.exe") and "-mwindows" not in _recipe(
        rules, "venvlauncher.exe"
    )
    assert "-fms-extensions" in _recipe(rules, "obj/python3dll/PC/python3dll.o")
    assert "'-DPYTHON_DLL_NAME=\"python314\"'" in _recipe(rules, "obj/python3dll/PC/python3dll.o")
    assert " -shared " in _recipe(rules, "python3.dll")


def test_the_build_info_says_which_objects_are_the_core_and_which_each_module(
    pcbuild, extensions, parts, rules
):
    """What PYTHON.json's build_info is made from: every object of the DLL's link is the
    core's or exactly one module's, but the DLL's own resources (a packer's program has
    its own); config.c's own entries are the core's; each built-in extension links its
    recipe's library; Windows' libraries keep their Windows names."""
    original = read_member(pcbuild[0], f"{SOURCE.top_dir}/{CONFIG_C}").decode()
    info = build_info(parts, builtin_config(original, list(extensions)))
    dll = re.search(rf"^python{SOURCE.minor.replace('.', '')}\.dll: (.*)$", rules, re.M)
    assert dll is not None
    module_objs = [o for m in info["modules"].values() for o in m["objs"]]
    linked = dll.group(1).split()
    assert [o for o in linked if o.endswith(".rc.o")] == ["obj/pythoncore/PC/python_nt.rc.o"]
    assert sorted(info["core_objs"] + module_objs) == sorted(o for o in linked if not o.endswith(".rc.o"))
    assert len(module_objs) == len(set(module_objs))
    assert info["modules"]["_ssl"]["objs"] == ["obj/_ssl/Modules/_ssl.o"]
    assert info["modules"]["_ssl"]["link_flags"][:2] == ["-lssl", "-lcrypto"]
    assert info["modules"]["_ssl"]["in_core"] is False
    assert info["modules"]["_sqlite3"]["link_flags"][0] == "-lsqlite3"
    assert info["modules"]["winreg"] == {
        "in_core": True,
        "init_fn": "PyInit_winreg",
        "link_flags": [],
        "objs": [],
    }
    assert info["modules"]["sys"]["init_fn"] == "NULL"
    assert "-lpathcch" in info["core_link_flags"] and "-lz" in info["core_link_flags"]
    assert (
        info["inittab_object"] == "obj/pythoncore/PC/config.o" and info["inittab_object"] in info["core_objs"]
    )
    assert "-DPy_BUILD_CORE" in info["inittab_cflags"] and not any(
        f.startswith("-I") for f in info["inittab_cflags"]
    )


def test_each_image_gets_its_projects_resources_with_its_own_file_name(rules):
    """The manifest, icon and version information of each program and DLL come from its
    project's resource script, compiled by $(RC) with the project's definitions; the
    version's third field is python.props' Field3Value (3.14.7: 7150)."""
    python = _recipe(rules, "obj/python/PC/python_exe.rc.o")
    assert python.splitlines()[-1].startswith("\t$(RC) ") and "-O coff -i $< -o $@" in python
    assert """'-DORIGINAL_FILENAME=\\"python.exe\\"'""" in python and f"-I{INNER}/PC" in python
    micro = int(SOURCE.version.split(".")[2])
    assert f"-DFIELD3={micro * 1000 + 150}" in python and "--language=0x0409" in python
    dll = _recipe(rules, "obj/pythoncore/PC/python_nt.rc.o")
    assert """'-DORIGINAL_FILENAME=\\"python314.dll\\"'""" in dll
    assert "-DPYW_ICON" in _recipe(rules, "obj/venvwlauncher/PC/pylauncher.rc.o")
    for image, resource in [
        ("python.exe", "obj/python/PC/python_exe.rc.o"),
        ("pythonw.exe", "obj/pythonw/PC/pythonw_exe.rc.o"),
        ("venvlauncher.exe", "obj/venvlauncher/PC/pylauncher.rc.o"),
        ("python3.dll", "obj/python3dll/PC/python_nt.rc.o"),
    ]:
        assert resource in _recipe(rules, image), image


@pytest.mark.parametrize(
    "version, field3", [("3.14.7", "7150"), ("3.15.0rc1", "121"), ("3.16.0a2", "102"), ("3.13.15", "15150")]
)
def test_field3_is_computed_as_python_props_computes_it(version, field3):
    assert field3_value(version) == field3


def test_a_version_field3_cannot_be_computed_from_is_refused():
    with pytest.raises(PyfreightError, match=r"'3\.14' is not MAJOR\.MINOR\.MICRO"):
        field3_value("3.14")
