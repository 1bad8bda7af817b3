"""formats/msbuild.py: Visual Studio project files read as data, on small projects that
exercise each rule and on the pinned CPython's own PCbuild/pythoncore.vcxproj."""

from __future__ import annotations

import tarfile
import time
import tracemalloc
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pyfreight.cpython.versions import cpython_source
from pyfreight.formats import msbuild
from pyfreight.formats.msbuild import (
    MAX_CONDITION_DEPTH,
    MAX_ELEMENT_DEPTH,
    MAX_ELEMENTS,
    MAX_FILES,
    MAX_IMPORT_DEPTH,
    MAX_ITEMS,
    MAX_PROJECT_CHARS,
    MAX_QUESTIONS,
    MAX_VALUE_CHARS,
    ProjectRefused,
    Unevaluable,
    read_project,
    split_list,
)
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


# A patched CPython source is input like any other: a project built to exhaust the
# reader is refused in one line, quickly and in little memory, at limits no real
# project comes near (see msbuild.py), never with a MemoryError or RecursionError.


@contextmanager
def _small_and_quick() -> Iterator[None]:
    """The block must end within ten seconds, having held under 100 MB: a reader that
    copies or expands what it was refused takes minutes and gigabytes, and a bound near
    the second one run takes fails on a busy 2-core CI machine (it took 1.3 s there)."""
    tracemalloc.start()
    started = time.perf_counter()
    try:
        yield
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 10
    assert peak < 100 << 20


def _refused(project: Path, root: Path, match: str) -> ProjectRefused:
    """The one-line refusal of reading `project`, small and quick."""
    with _small_and_quick(), pytest.raises(ProjectRefused, match=match) as refused:
        read_project(project, {}, root)
    assert "\n" not in str(refused.value)
    return refused.value


DOUBLINGS = {
    "property": "<PropertyGroup><P>x</P>" + "<P>$(P)$(P)</P>" * 64 + "</PropertyGroup>",
    "definition-metadata": "<ItemDefinitionGroup><ClCompile><D>x</D></ClCompile></ItemDefinitionGroup>"
    + "<ItemDefinitionGroup><ClCompile><D>%(D);%(D)</D></ClCompile></ItemDefinitionGroup>" * 64,
    "transform": "<ItemGroup><I Include='a' />"
    + "<I Include=\"@(I->'%(Identity)%(Identity)')\" />" * 64
    + "</ItemGroup>",
}


@pytest.mark.parametrize("body", DOUBLINGS.values(), ids=DOUBLINGS.keys())
def test_a_value_doubling_itself_stops_at_the_value_limit(tmp_path, body):
    """Each line doubles the value: 64 of them would be 2^64 characters."""
    project = _write(tmp_path / "PCbuild/demo.vcxproj", body)
    _refused(project, tmp_path, rf"^demo.vcxproj: .* more than {MAX_VALUE_CHARS} characters")


def test_items_doubling_themselves_stop_at_the_item_limit(tmp_path):
    body = "<ItemGroup><I Include='a' />" + "<I Include='@(I);@(I)' />" * 64 + "</ItemGroup>"
    project = _write(tmp_path / "PCbuild/demo.vcxproj", body)
    _refused(project, tmp_path, rf"^demo.vcxproj: more than {MAX_ITEMS} items")


def test_the_items_of_one_element_share_their_metadata(tmp_path):
    """Twenty thousand items of one element with two thousand metadata: a copy of
    the metadata each held a gigabyte."""
    metadata = "".join(f"<M{n}>v</M{n}>" for n in range(2000))
    body = "<ItemGroup><I Include='a' />" + "<I Include='@(I);@(I)' />" * 9
    project = _write(tmp_path / "PCbuild/demo.vcxproj", f"{body}<J Include='@(I)'>{metadata}</J></ItemGroup>")
    with _small_and_quick():
        items = read_project(project, {}, tmp_path).items_of("J")
    assert len(items) == 3**9 and items[0].metadata["M1999"] == "v"


def test_many_large_values_stop_at_the_project_budget(tmp_path):
    """Each value under the value limit, together past what one project may expand."""
    half = MAX_VALUE_CHARS // 2
    copies = "".join(f"<Q{n}>$(P)-</Q{n}>" for n in range(2 * MAX_PROJECT_CHARS // half))
    body = f"<PropertyGroup><P>{'x' * 1024}</P>" + "<P>$(P)$(P)</P>" * 9 + copies + "</PropertyGroup>"
    project = _write(tmp_path / "PCbuild/demo.vcxproj", body)
    _refused(project, tmp_path, rf"^demo.vcxproj: .* more than {MAX_PROJECT_CHARS} characters")


def test_a_file_larger_than_the_project_budget_is_refused_unread(tmp_path):
    project = _write(tmp_path / "PCbuild/demo.vcxproj", "<PropertyGroup><P>x</P></PropertyGroup>")
    with project.open("r+b") as file:  # sparse: no disk used
        file.truncate(1 << 30)
    _refused(
        project, tmp_path, rf"^demo.vcxproj: {1 << 30} bytes to read, past the {MAX_PROJECT_CHARS} characters"
    )


IMPORTS = {  # files of PCbuild/ and what each imports; the cycle the refusal names
    "itself": ({"demo.vcxproj": "demo.vcxproj"}, "PCbuild/demo.vcxproj -> PCbuild/demo.vcxproj"),
    "cycle": (
        {"demo.vcxproj": "a.props", "a.props": "sub\\b.props", "sub/b.props": "..\\a.props"},
        "PCbuild/a.props -> PCbuild/sub/b.props -> PCbuild/a.props",
    ),
}


@pytest.mark.parametrize(("imports", "chain"), IMPORTS.values(), ids=IMPORTS.keys())
def test_an_import_cycle_is_refused_naming_the_chain(tmp_path, imports, chain):
    for name, imported in imports.items():
        _write(tmp_path / "PCbuild" / name, f'<Import Project="{imported}" />')
    refused = _refused(tmp_path / "PCbuild/demo.vcxproj", tmp_path, "import cycle")
    assert chain in str(refused)


def test_a_long_chain_of_imports_stops_at_the_depth_limit(tmp_path):
    """Four hundred files, each importing the next: past Python's recursion today."""
    for n in range(400):
        _write(tmp_path / f"PCbuild/p{n}.props", f'<Import Project="p{n + 1}.props" />')
    _refused(tmp_path / "PCbuild/p0.props", tmp_path, rf"imports nested more than {MAX_IMPORT_DEPTH} deep")


def test_imports_branching_at_each_level_stop_at_the_file_limit(tmp_path):
    """Each of 20 files imports the next twice: a million reads, no cycle."""
    for n in range(20):
        _write(tmp_path / f"PCbuild/p{n}.props", f'<Import Project="p{n + 1}.props" />' * 2)
    _refused(tmp_path / "PCbuild/p0.props", tmp_path, rf"more than {MAX_FILES} files read")


CONDITIONS = {
    "parentheses": "(" * 5000 + "'a' == 'a'" + ")" * 5000,
    "negations": "!" * 5000 + "true",
}


@pytest.mark.parametrize("condition", CONDITIONS.values(), ids=CONDITIONS.keys())
def test_a_deeply_nested_condition_is_refused_at_the_depth_limit(tmp_path, condition):
    project = _write(tmp_path / "PCbuild/demo.vcxproj", f'<PropertyGroup Condition="{condition}" />')
    _refused(project, tmp_path, rf"condition nested more than {MAX_CONDITION_DEPTH} deep")


DOCUMENTS = {
    "nested-import-groups": (
        "<ImportGroup>" * 5000 + "</ImportGroup>" * 5000,
        rf"^demo.vcxproj: elements nested more than {MAX_ELEMENT_DEPTH} deep",
    ),
    "too-many-elements": (
        "<Targets>" + "<T/>" * (MAX_ELEMENTS + 1) + "</Targets>",
        rf"^demo.vcxproj: more than {MAX_ELEMENTS} elements",
    ),
}


@pytest.mark.parametrize(("body", "match"), DOCUMENTS.values(), ids=DOCUMENTS.keys())
def test_a_document_too_deep_or_too_large_is_refused_as_it_is_parsed(tmp_path, body, match):
    _refused(_write(tmp_path / "PCbuild/demo.vcxproj", body), tmp_path, match)


def test_questions_to_the_file_system_stop_at_their_limit(tmp_path):
    """Each Exists() is a question: a condition of thousands, thousands of questions."""
    condition = " or ".join(["Exists('a')"] * (MAX_QUESTIONS + 1))
    project = _write(tmp_path / "PCbuild/demo.vcxproj", f'<PropertyGroup Condition="{condition}" />')
    _refused(project, tmp_path, rf"^demo.vcxproj: more than {MAX_QUESTIONS} files asked after")


def test_a_name_too_long_for_the_system_is_not_there(tmp_path):
    """Exists() and Import of a name the system refuses to look up: not there."""
    long = "a\\" * 3000
    project = _write(
        tmp_path / "PCbuild/demo.vcxproj",
        f"""<Import Project="{long}x.props" />
        <PropertyGroup><Seen Condition="Exists('{long}')">yes</Seen></PropertyGroup>""",
    )
    assert read_project(project, {}, tmp_path).property("Seen") == ""


def test_real_projects_stay_far_below_every_limit(pcbuild):
    """pythoncore.vcxproj, the largest project, reads as well with each limit on a
    size or a count a tenth of what it is."""
    known = {"Platform": "x64", "Configuration": "Release", "PySourcePath": f"{pcbuild}/", "PyDebugExt": ""}
    known |= {"MajorVersionNumber": "3", "MinorVersionNumber": "14", "IncludeExternals": "false"}
    with pytest.MonkeyPatch.context() as patch:
        sizes = (
            "MAX_VALUE_CHARS",
            "MAX_PROJECT_CHARS",
            "MAX_ITEMS",
            "MAX_ELEMENTS",
            "MAX_FILES",
            "MAX_QUESTIONS",
        )
        for name in sizes:
            patch.setattr(msbuild, name, getattr(msbuild, name) // 10)
        assert len(read_project(pcbuild / "PCbuild/pythoncore.vcxproj", known, pcbuild).items) > 500
