"""formats/msbuild.py: Visual Studio project files read as data, on small projects that
exercise each rule and on the pinned CPython's own PCbuild/pythoncore.vcxproj."""

from __future__ import annotations

import tarfile
from pathlib import Path

import pytest

from pyfreight.cpython.versions import cpython_source
from pyfreight.formats.msbuild import Unevaluable, read_project, split_list
from pyfreight.paths import default_workspace
from pyfreight.sources.fetch import fetch_source

HEAD = '<Project xmlns="http://schemas.microsoft.com/developer/msbuild/2003">'


def _write(path: Path, body: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'<?xml version="1.0" encoding="utf-8"?>\n{HEAD}\n{body}\n</Project>\n')
    return path


def test_properties_follow_document_order_conditions_and_imports(tmp_path):
    _write(
        tmp_path / "src/PCbuild/common.props",
        "<PropertyGroup><Arch Condition=\"$(Platform) == 'x64'\">amd64</Arch></PropertyGroup>",
    )
    _write(tmp_path / "outside.props", "<PropertyGroup><Leaked>yes</Leaked></PropertyGroup>")
    project = _write(
        tmp_path / "src/PCbuild/demo.vcxproj",
        """
        <Import Project="common.props" />
        <Import Project="..\\..\\outside.props" />
        <Import Project="$(VCTargetsPath)\\Microsoft.Cpp.props" />
        <PropertyGroup>
          <Name>first</Name>
          <Name Condition="'$(Arch)' == 'AMD64' and !('$(Configuration)' == 'Debug')">second-$(Arch)</Name>
          <Platform>arm64</Platform>
          <Slash Condition="HasTrailingSlash('$(Dir)')">has</Slash>
          <Seen Condition="Exists('common.props') or Exists('..\\..\\outside.props')">maybe</Seen>
        </PropertyGroup>
        """,
    )
    read = read_project(
        project, {"Platform": "x64", "Configuration": "Release", "Dir": "a\\"}, tmp_path / "src"
    )
    # MSBuild compares without case; a global property is never overwritten
    assert read.property("Name") == "second-amd64" and read.property("Platform") == "x64"
    assert read.property("Slash") == "has" and read.property("Leaked") == ""
    # Exists() is asked relative to the tree only (the project's own folder is not the root)
    assert read.property("Seen") == ""


def test_item_definitions_extend_and_items_inherit(tmp_path):
    project = _write(
        tmp_path / "PCbuild/demo.vcxproj",
        """
        <ItemDefinitionGroup>
          <ClCompile><PreprocessorDefinitions>BASE;%(PreprocessorDefinitions)</PreprocessorDefinitions></ClCompile>
          <Link><AdditionalDependencies>ws2_32.lib;%(AdditionalDependencies)</AdditionalDependencies></Link>
        </ItemDefinitionGroup>
        <ItemDefinitionGroup>
          <ClCompile><PreprocessorDefinitions>MORE=1;%(PreprocessorDefinitions)</PreprocessorDefinitions></ClCompile>
        </ItemDefinitionGroup>
        <ItemGroup>
          <ClCompile Include="..\\Modules\\a.c" />
          <ClCompile Include="..\\Modules\\b.c">
            <PreprocessorDefinitions>ONLY_B;%(PreprocessorDefinitions)</PreprocessorDefinitions>
          </ClCompile>
          <ClCompile Include="..\\Modules\\arm.c" Condition="'$(Platform)' == 'ARM64'" />
          <ProjectReference Include="pythoncore.vcxproj" />
        </ItemGroup>
        """,
    )
    read = read_project(project, {"Platform": "x64"}, tmp_path)
    a, b = read.items_of("ClCompile")
    assert a.path(project.parent) == tmp_path / "PCbuild/../Modules/a.c"
    assert split_list(read.metadata(a, "PreprocessorDefinitions")) == ["MORE=1", "BASE"]
    assert split_list(read.metadata(b, "PreprocessorDefinitions")) == ["ONLY_B", "MORE=1", "BASE"]
    assert split_list(read.definitions["Link"]["AdditionalDependencies"] or "") == ["ws2_32.lib"]
    assert [i.include for i in read.items_of("ProjectReference")] == ["pythoncore.vcxproj"]


def test_what_msbuild_computes_is_unknown_and_an_error_only_when_used(tmp_path):
    project = _write(
        tmp_path / "PCbuild/demo.vcxproj",
        """
        <PropertyGroup>
          <Version>$([System.IO.File]::ReadAllText(`version.txt`))</Version>
          <Plain>kept</Plain>
        </PropertyGroup>
        <Target Name="Build" Condition="$(Anything.Weird())"><Exec Command="rm -rf /" /></Target>
        """,
    )
    read = read_project(project, {}, tmp_path)
    assert read.property("Plain") == "kept"
    with pytest.raises(Unevaluable, match=r"property Version is computed by MSBuild; pass it"):
        read.property("Version")
    assert read_project(project, {"Version": "3.14"}, tmp_path).property("Version") == "3.14"


def test_property_names_are_case_insensitive_and_a_function_around_a_property_is_unknown(tmp_path):
    """As in MSBuild, $(TclLibName) is the tclLibName defined before (tcltk.props does
    this); $([System.Version]::Parse($(V)).Major) is computed by MSBuild, never left in a
    value half expanded."""
    project = _write(
        tmp_path / "PCbuild/demo.vcxproj",
        """
        <PropertyGroup>
          <tclLibName>tcl86t.lib</tclLibName>
          <Libs>lib\\$(TclLibName)</Libs>
          <Major>$([System.Version]::Parse($(TclVersion)).Major)</Major>
          <Uses>tcl$(Major)</Uses>
        </PropertyGroup>
        """,
    )
    read = read_project(project, {"TCLVERSION": "8.6.18.0"}, tmp_path)
    assert read.property("libs") == "lib\\tcl86t.lib"
    with pytest.raises(Unevaluable, match="property Uses is computed by MSBuild"):
        read.property("Uses")
    assert read_project(project, {"major": "8"}, tmp_path).property("Uses") == "tcl8"


def test_a_file_that_is_not_a_project_is_one_error(tmp_path):
    broken = tmp_path / "broken.vcxproj"
    broken.write_text("<Project><unclosed></Project>")
    with pytest.raises(Exception, match=r"broken.vcxproj: not a readable MSBuild project"):
        read_project(broken, {}, tmp_path)


@pytest.fixture(scope="module")
def pcbuild(tmp_path_factory) -> Path:
    """The pinned default CPython's PCbuild/ and what its projects name, unpacked."""
    source = cpython_source(None)
    tarball = fetch_source(source.source, default_workspace().downloads, log=lambda m: None)
    dest = tmp_path_factory.mktemp("cpython")
    with tarfile.open(tarball) as tar:
        members = [m for m in tar if "/PCbuild/" in m.name and m.name.endswith((".props", ".vcxproj"))]
        tar.extractall(dest, members=members, filter="data")
    return next(dest.iterdir())


def test_pythoncore_of_the_pinned_cpython_reads_as_its_sources_and_flags(pcbuild):
    known = {"Platform": "x64", "Configuration": "Release", "PySourcePath": f"{pcbuild}/", "PyDebugExt": ""}
    known |= {"MajorVersionNumber": "3", "MinorVersionNumber": "14", "IncludeExternals": "false"}
    read = read_project(pcbuild / "PCbuild/pythoncore.vcxproj", known, pcbuild)
    sources = {i.include for i in read.items_of("ClCompile")}
    assert {"..\\Python\\ceval.c", "..\\Objects\\longobject.c", "..\\PC\\winreg.c"} <= sources
    assert len(sources) > 200 and all(s.endswith(".c") for s in sources)
    ceval = next(i for i in read.items_of("ClCompile") if i.include == "..\\Python\\ceval.c")
    defines = split_list(read.metadata(ceval, "PreprocessorDefinitions"))
    assert {"Py_BUILD_CORE_BUILTIN", "Py_ENABLE_SHARED", 'PY3_DLLNAME=L"python3"', "_WIN64"} <= set(defines)
    assert "ws2_32.lib" in split_list(read.definitions["Link"]["AdditionalDependencies"] or "")
    assert (
        read.property("PyDllName") == "python314" and read.property("ConfigurationType") == "DynamicLibrary"
    )


def test_items_name_earlier_items_and_transform_them_by_identity(tmp_path):
    """pcbuild.proj's way of listing projects: @(Kind) and @(Kind->'%(Identity).vcxproj')."""
    project = _write(
        tmp_path / "src/PCbuild/all.proj",
        """
        <ItemGroup>
          <Modules Include="_a;_b" />
          <Modules Include="_c" Condition="'$(WithC)' == 'true'" />
          <External Include="_d" />
          <Modules Include="@(External)" />
          <Projects Include="core.vcxproj;@(Modules->'%(Identity).vcxproj')" />
        </ItemGroup>
        """,
    )
    read = read_project(project, {"WithC": "false"}, tmp_path / "src")
    assert [i.include for i in read.items_of("Modules")] == ["_a", "_b", "_d"]
    assert [i.include for i in read.items_of("Projects")] == [
        "core.vcxproj",
        "_a.vcxproj",
        "_b.vcxproj",
        "_d.vcxproj",
    ]


def test_a_transform_with_other_metadata_is_refused_by_name(tmp_path):
    project = _write(
        tmp_path / "src/PCbuild/all.proj",
        """<ItemGroup><M Include="_a" /><P Include="@(M->'%(Filename).x')" /></ItemGroup>""",
    )
    with pytest.raises(Unevaluable, match=r"cannot evaluate the transform @\(M->'%\(Filename\)\.x'\)"):
        read_project(project, {}, tmp_path / "src")
