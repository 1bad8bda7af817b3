"""Reading Visual Studio's MSBuild project files (.vcxproj, .props) as data.

CPython's Windows build is described by PCbuild/*.vcxproj: which sources each project
compiles, with which definitions and include folders, and what it links. This module
evaluates a project the way MSBuild does for those facts, and no further:

- properties, in document order through <Import>ed files, each assignment only when
  its Condition holds; global properties (what a caller passes, as `msbuild /p:`) are
  never overwritten by the project; names are case-insensitive, as in MSBuild
  (tcltk.props defines tclLibName and uses $(TclLibName));
- item definitions (<ItemDefinitionGroup>), whose metadata may extend the earlier value
  with %(Name);
- items (<ItemGroup>: ClCompile, ProjectReference, ...) with their own metadata; an
  Include may name earlier items, @(Kind), or transform them, @(Kind->'%(Identity).x').

Conditions support what the projects use: quoted strings, $(Property), ==, !=, and, or,
!, parentheses, Exists() and HasTrailingSlash(). A property function ($([System...]),
$(Name.Replace(...))) cannot be evaluated here: the property it defines is marked
unknown, and using an unknown value is an error naming it (pass the property instead).
<Target> elements (build steps) are not evaluated. Nothing outside the project's folder
tree is read: an import leaving it, or not there (Visual Studio's own .props), is
skipped."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath

from pyfreight.errors import PyfreightError

NS = "{http://schemas.microsoft.com/developer/msbuild/2003}"
PROPERTY = re.compile(r"\$\(([^()]*(?:\([^()]*\)[^()]*)*)\)")
ITEM_LIST = re.compile(r"@\(([A-Za-z_][A-Za-z0-9_]*)(?:->'([^']*)')?\)")
SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
TOKEN = re.compile(
    r"\s*(?:(?P<string>'[^']*'|`[^`]*`)|(?P<op>==|!=|\(|\)|!)|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<prop>\$\((?:[^()]|\([^()]*\))*\)))"
)


# What is evaluated; <Target>, <UsingTask>, <ProjectExtensions> are build steps and tools.
EVALUATED = frozenset({"Import", "ImportGroup", "PropertyGroup", "ItemDefinitionGroup", "ItemGroup"})


class Unevaluable(PyfreightError):
    """A property function or construct this reader does not evaluate."""


@dataclass(frozen=True)
class Item:
    kind: str  # ClCompile, ProjectReference, ...
    include: str  # as written, properties expanded (Windows separators)
    metadata: Mapping[str, str | None]  # its own, expanded, %(Name) resolved; None: unknown

    def path(self, project_dir: Path) -> Path:
        """The item's file, relative to the project's folder, as a path here."""
        return project_dir.joinpath(*PureWindowsPath(self.include).parts)


@dataclass
class Project:
    path: Path
    # by name in lower case (MSBuild's names are case-insensitive); None: defined by
    # something not evaluated here
    properties: dict[str, str | None]
    definitions: dict[str, dict[str, str | None]] = field(default_factory=dict)  # tool -> metadata
    items: list[Item] = field(default_factory=list)

    def property(self, name: str) -> str:
        value = self.properties.get(name.lower(), "")
        if value is None:
            raise Unevaluable(f"{self.path.name}: property {name} is computed by MSBuild; pass it")
        return value

    def items_of(self, kind: str) -> list[Item]:
        return [i for i in self.items if i.kind == kind]

    def metadata(self, item: Item, name: str) -> str:
        """An item's metadata, falling back to its kind's item definition."""
        value = (
            item.metadata[name]
            if name in item.metadata
            else self.definitions.get(item.kind, {}).get(name, "")
        )
        if value is None:
            raise Unevaluable(f"{self.path.name}: {item.kind} {item.include}: {name} is computed by MSBuild")
        return value


def split_list(value: str) -> list[str]:
    """An MSBuild list (;-separated, whitespace around entries ignored), without the
    empty entries a trailing %(Name) of nothing leaves."""
    return [part.strip() for part in value.split(";") if part.strip()]


def read_project(path: Path, global_properties: Mapping[str, str], root: Path) -> Project:
    """Evaluates `path` with `global_properties` (msbuild /p:NAME=VALUE); nothing outside
    `root` (the source tree) is read or asked after."""
    project = Project(path=path, properties={k.lower(): v for k, v in global_properties.items()})
    reader = _Reader(project, frozenset(k.lower() for k in global_properties), root)
    reader.read_file(path)
    return project


class _Reader:
    def __init__(self, project: Project, fixed: frozenset[str], root: Path) -> None:
        self.project = project
        self.fixed = fixed
        self.root = root.resolve()

    def read_file(self, path: Path) -> None:
        try:
            document = ET.parse(path).getroot()
        except (OSError, ET.ParseError) as exc:
            raise PyfreightError(f"{path.name}: not a readable MSBuild project ({exc})") from None
        self.project.properties["msbuildthisfiledirectory"] = str(path.parent) + "\\"
        for element in document:
            self.element(element, path)

    def element(self, element: ET.Element, path: Path) -> None:
        tag = element.tag.removeprefix(NS)
        if tag not in EVALUATED:
            return
        try:
            if not self.holds(element.get("Condition")):
                return
        except Unevaluable:
            if tag != "PropertyGroup":
                raise
            for child in element:  # maybe assigned, maybe not: unknown
                if child.tag.removeprefix(NS).lower() not in self.fixed:
                    self.project.properties[child.tag.removeprefix(NS).lower()] = None
            return
        if tag == "Import":
            self.import_file(element.get("Project", ""), path)
        elif tag == "ImportGroup":
            for child in element:
                self.element(child, path)
        elif tag == "PropertyGroup":
            for child in element:
                name = child.tag.removeprefix(NS).lower()
                try:
                    if self.holds(child.get("Condition")):
                        self.assign(name, child.text or "")
                except Unevaluable:
                    if name not in self.fixed:  # maybe assigned, maybe not: unknown
                        self.project.properties[name] = None
        elif tag == "ItemDefinitionGroup":
            for tool in element:
                known = self.project.definitions.setdefault(tool.tag.removeprefix(NS), {})
                try:
                    applies = self.holds(tool.get("Condition"))
                except Unevaluable:  # maybe set, maybe not: each of its metadata is unknown
                    known |= {meta.tag.removeprefix(NS): None for meta in tool}
                    continue
                if applies:
                    self.merge(known, tool, known)
        elif tag == "ItemGroup":
            for child in element:
                if self.holds(child.get("Condition")) and child.get("Include"):
                    self.add_item(child)

    def import_file(self, raw: str, importer: Path) -> None:
        try:
            name = self.expand(raw)
        except Unevaluable:
            return  # Visual Studio's own folders ($(VCTargetsPath), $(UserRootDir))
        found = (importer.parent / PureWindowsPath(name).as_posix()).resolve()
        if not found.is_relative_to(self.root) or not found.is_file():
            return
        self.read_file(found)
        self.project.properties["msbuildthisfiledirectory"] = str(importer.parent) + "\\"

    def assign(self, name: str, raw: str) -> None:
        if name in self.fixed:
            return
        try:
            self.project.properties[name] = self.expand(raw.strip())
        except Unevaluable:
            self.project.properties[name] = None

    def merge(
        self, into: dict[str, str | None], element: ET.Element, inherited: Mapping[str, str | None]
    ) -> None:
        """Sets each metadata of `element` in `into`; one this reader cannot evaluate (or
        that extends one it could not) is unknown (None), an error only when asked for."""
        for meta in element:
            name = meta.tag.removeprefix(NS)
            try:
                if not self.holds(meta.get("Condition")):
                    continue
                earlier = inherited.get(name, "")
                if earlier is None and f"%({name})" in (meta.text or ""):
                    raise Unevaluable(name)
                text = " ".join((meta.text or "").split()).replace(f"%({name})", earlier or "")
                into[name] = self.expand(text)
            except Unevaluable:
                into[name] = None

    def add_item(self, element: ET.Element) -> None:
        kind = element.tag.removeprefix(NS)
        defaults = self.project.definitions.get(kind, {})
        own: dict[str, str | None] = {}
        self.merge(own, element, defaults)
        for include in split_list(self.expand_items(self.expand(element.get("Include", "")))):
            self.project.items.append(Item(kind=kind, include=include, metadata=dict(own)))

    def expand_items(self, text: str) -> str:
        """@(Kind) as the includes of the items of that kind so far, ;-separated, and
        @(Kind->'...%(Identity)...') as each transformed; other metadata in a transform
        is not evaluated here."""

        def items(match: re.Match[str]) -> str:
            kind, transform = match.group(1), match.group(2)
            if transform is not None and re.search(r"%\((?!Identity\))", transform):
                raise Unevaluable(f"{self.project.path.name}: cannot evaluate the transform {match.group(0)}")
            return ";".join(
                i.include if transform is None else transform.replace("%(Identity)", i.include)
                for i in self.project.items_of(kind)
            )

        return ITEM_LIST.sub(items, text)

    def expand(self, text: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if not SIMPLE_NAME.match(name):
                raise Unevaluable(f"{self.project.path.name}: cannot evaluate $({name})")
            found = self.project.properties.get(name.lower(), "")
            if found is None:
                raise Unevaluable(
                    f"{self.project.path.name}: property {name} is computed by MSBuild; pass it"
                )
            return found

        expanded = PROPERTY.sub(value, text)
        if "$(" in expanded:  # a property function around a property: $([...]::Parse($(V)))
            raise Unevaluable(f"{self.project.path.name}: cannot evaluate {text.strip()}")
        return expanded

    def holds(self, condition: str | None) -> bool:
        if condition is None or not condition.strip():
            return True
        return _Condition(condition, self).evaluate()


class _Condition:
    """A recursive-descent reading of one Condition: or > and > not > comparison."""

    def __init__(self, text: str, reader: _Reader) -> None:
        self.text = text
        self.reader = reader
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text.rstrip()):
            match = TOKEN.match(text, position)
            if not match or match.end() == position:
                raise Unevaluable(f"{reader.project.path.name}: cannot read condition {text!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            position = match.end()
        self.at = 0

    def evaluate(self) -> bool:
        result = self.either()
        if self.at != len(self.tokens):
            raise Unevaluable(f"{self.reader.project.path.name}: cannot read condition {self.text!r}")
        return result

    def peek(self) -> tuple[str, str]:
        return self.tokens[self.at] if self.at < len(self.tokens) else ("", "")

    def take(self) -> tuple[str, str]:
        token = self.peek()
        self.at += 1
        return token

    def either(self) -> bool:
        result = self.both()
        while self.peek()[1].lower() == "or":
            self.take()
            right = self.both()
            result = result or right
        return result

    def both(self) -> bool:
        result = self.negation()
        while self.peek()[1].lower() == "and":
            self.take()
            right = self.negation()
            result = result and right
        return result

    def negation(self) -> bool:
        if self.peek() == ("op", "!"):
            self.take()
            return not self.negation()
        return self.comparison()

    def comparison(self) -> bool:
        if self.peek() == ("op", "("):
            self.take()
            result = self.either()
            if self.take() != ("op", ")"):
                raise Unevaluable(f"{self.reader.project.path.name}: unbalanced condition {self.text!r}")
            return result
        left = self.operand()
        if self.peek()[1] in ("==", "!="):
            operator = self.take()[1]
            right = self.operand()
            equal = left.lower() == right.lower()  # MSBuild compares strings without case
            return equal if operator == "==" else not equal
        if left.lower() in ("true", "false"):
            return left.lower() == "true"
        raise Unevaluable(f"{self.reader.project.path.name}: {left!r} is not true or false in {self.text!r}")

    def operand(self) -> str:
        kind, text = self.take()
        if kind == "string":
            return self.reader.expand(text[1:-1])
        if kind == "prop":
            return self.reader.expand(text)
        if kind == "word" and text.lower() in ("exists", "hastrailingslash") and self.peek() == ("op", "("):
            self.take()
            argument = self.operand()
            if self.take() != ("op", ")"):
                raise Unevaluable(f"{self.reader.project.path.name}: unbalanced condition {self.text!r}")
            if text.lower() == "hastrailingslash":
                return "true" if argument.endswith(("\\", "/")) else "false"
            return "true" if self._exists(argument) else "false"
        if kind == "word":
            return text
        raise Unevaluable(f"{self.reader.project.path.name}: cannot read condition {self.text!r}")

    def _exists(self, name: str) -> bool:
        if not name:
            return False
        found = Path(PureWindowsPath(name).as_posix())
        if not found.is_absolute():
            found = self.reader.root / found
        found = found.resolve()
        return found.is_relative_to(self.reader.root) and found.exists()
