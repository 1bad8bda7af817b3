"""cpython/windows_projects.py: the Makefile of the Windows build, written from the
pinned CPython's own PCbuild projects and windows/projects.yaml."""

from __future__ import annotations

import re
import tarfile

import pytest

from pyfreight.cpython.build import patches_for
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.versions import cpython_source
from pyfreight.cpython.windows_projects import load_settings, makefile, read_pcbuild
from pyfreight.paths import default_workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import all_targets, default_target

WINDOWS = next(t for t in all_targets().values() if t.cpython_build == "visual-studio-projects")
SOURCE = cpython_source(None)
INNER = f"/build/work/{SOURCE.top_dir}"


@pytest.fixture(scope="module")
def rules(tmp_path_factory) -> str:
    tarball = fetch_source(SOURCE.source, default_workspace().downloads, log=lambda m: None)
    root = read_pcbuild(tarball, SOURCE.top_dir, tmp_path_factory.mktemp("pcbuild"))
    assert not (root / "Lib").exists()  # only the project files are unpacked
    return makefile(root, WINDOWS, SOURCE.version, INNER)


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
    assert only_windows and all("dynload-win" in name for name in only_windows)
    assert set(linux) <= set(windows)


def test_the_settings_file_is_read_through_its_schema():
    settings = load_settings()
    assert settings["dll_projects"] == ["pythoncore"] and settings["libraries"]["zlib-ng"] == "z"
    assert all(len(entry["why"]) > 10 for entry in settings["source_flags"].values())


def test_only_project_files_are_unpacked(tmp_path):
    tarball = fetch_source(SOURCE.source, default_workspace().downloads, log=lambda m: None)
    root = read_pcbuild(tarball, SOURCE.top_dir, tmp_path)
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files and all(p.suffix in (".props", ".vcxproj") for p in files)
    with tarfile.open(tarball) as tar:
        assert any(m.name.endswith("PCbuild/pythoncore.vcxproj") for m in tar)
