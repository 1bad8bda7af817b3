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
skipped.

A patched CPython source is input like any other, so the evaluation is bounded (limits
below): the length of any one value, what one project reads and expands in all, its
items, elements, files and questions to the file system, and how deep imports,
elements and conditions nest. A project past a limit, or importing itself, is refused
in one line (ProjectRefused), never evaluated as far as it asks."""

from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PureWindowsPath
from types import MappingProxyType

from pyfreight.errors import PyfreightError

NS = "{http://schemas.microsoft.com/developer/msbuild/2003}"
# *+ (possessive, never given back: what follows each run cannot be in it) keeps a
# "$(" left open before a megabyte from being tried again at each of its characters
PROPERTY = re.compile(r"\$\(([^()]*+(?:\([^()]*+\)[^()]*+)*+)\)")
ITEM_LIST = re.compile(r"@\(([A-Za-z_][A-Za-z0-9_]*)(?:->'([^']*)')?\)")
SIMPLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
TOKEN = re.compile(
    r"\s*(?:(?P<string>'[^']*'|`[^`]*`)|(?P<op>==|!=|\(|\)|!)|(?P<word>[A-Za-z_][A-Za-z0-9_.]*)"
    r"|(?P<prop>\$\((?:[^()]|\([^()]*+\))*+\)))"
)


# What is evaluated; <Target>, <UsingTask>, <ProjectExtensions> are build steps and tools.
EVALUATED = frozenset({"Import", "ImportGroup", "PropertyGroup", "ItemDefinitionGroup", "ItemGroup"})


# What CPython's own projects need, measured on 3.14's PCbuild (every project, x64 and
# ARM64, with and without the GIL): values of at most 749 characters (liblzma's
# definitions); for the largest, pythoncore.vcxproj, 114 000 characters read (90 KB,
# 5 files) and expanded, 1 079 elements and 584 items; at most 4 questions to the file
# system; imports 3 deep, elements 5 deep, conditions 2 parentheses deep. Each limit
# is far above that, and far below what hurts: a property doubling itself at each line
# would otherwise take gigabytes, and an import cycle or a deep nesting exhausts
# Python's recursion.
MAX_VALUE_CHARS = 1 << 20  # any one value, expanded
MAX_PROJECT_CHARS = 16 << 20  # file bytes read and characters expanded, for one project
MAX_ITEMS = 50_000
MAX_ELEMENTS = 50_000  # parsed, in the files of one project: a tree of 1M takes ~90 MB
MAX_FILES = 128  # read for one project, a file imported twice counted twice
MAX_QUESTIONS = 1_000  # Exists() and imports asked of the file system, for one project
MAX_IMPORT_DEPTH = 32
MAX_ELEMENT_DEPTH = 32
MAX_CONDITION_DEPTH = 32  # parentheses, ! and function calls in one condition


class Unevaluable(PyfreightError):
    """A property function or construct this reader does not evaluate."""


class ProjectRefused(PyfreightError):
    """A project past one of the limits above, or importing itself. Not Unevaluable,
    which the reader takes as "unknown" and carries on from."""


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


def _one_line(text: str) -> str:
    """`text` with what would break a one-line message (a newline in a file's name)
    escaped."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _excerpt(text: str, size: int = 80) -> str:
    """The start of `text` (a hostile value can be a megabyte) for a message."""
    flat = " ".join(text.split())
    return flat if len(flat) <= size else f"{flat[:size]}…"


def _filled(text: str, token: str, value: str) -> Iterator[str]:
    """The pieces of text.replace(token, value), for a bounded join."""
    parts = text.split(token)
    yield parts[0]
    for part in parts[1:]:
        yield value
        yield part


def _separated(parts: Iterable[str], separator: str) -> Iterator[str]:
    """The pieces of separator.join(parts), for a bounded join."""
    for index, part in enumerate(parts):
        if index:
            yield separator
        yield part


class _BoundedTree(ET.TreeBuilder):
    """A tree builder telling `opened` of each element with its depth as the parser
    meets it: a document nested or sized past the limits is refused before the tree
    is built."""

    def __init__(self, opened: Callable[[int], None]) -> None:
        super().__init__()
        self.opened = opened
        self.depth = 0

    def start(self, tag: str, attrs: dict[str, str], /) -> ET.Element:
        self.depth += 1
        self.opened(self.depth)
        return super().start(tag, attrs)

    def end(self, tag: str, /) -> ET.Element:
        self.depth -= 1
        return super().end(tag)


class _Reader:
    def __init__(self, project: Project, fixed: frozenset[str], root: Path) -> None:
        self.project = project
        self.fixed = fixed
        self.root = root.resolve()
        self.chain: list[Path] = []  # the files being read, resolved: the project, what it imports, ...
        self.by_kind: dict[str, list[Item]] = {}  # the items so far, for @(Kind)
        self.spent = 0  # file bytes read and characters expanded
        self.files = self.elements = self.questions = 0

    def refused(self, what: str, why: str = "no CPython project comes near this limit") -> ProjectRefused:
        where = self.project.path.name
        if len(self.chain) > 1:
            where += f" (in {self.shown(self.chain[-1])})"
        return ProjectRefused(_one_line(f"{where}: {what}; {why}, so it is not evaluated"))

    def shown(self, path: Path) -> str:
        return path.relative_to(self.root).as_posix() if path.is_relative_to(self.root) else path.name

    def read_file(self, path: Path) -> None:
        self.enter(path.resolve())
        try:
            document = self.parse(path)
            self.project.properties["msbuildthisfiledirectory"] = str(path.parent) + "\\"
            for element in document:
                self.element(element, path)
        finally:
            self.chain.pop()

    def enter(self, found: Path) -> None:
        """`found` joins the chain of files being read: a second visit would read it
        forever (MSBuild too refuses a project importing itself)."""
        if found in self.chain:
            cycle = [*self.chain[self.chain.index(found) :], found]
            raise self.refused(
                f"an import cycle, {' -> '.join(map(self.shown, cycle))}", "it would be read forever"
            )
        if len(self.chain) >= MAX_IMPORT_DEPTH:
            raise self.refused(f"imports nested more than {MAX_IMPORT_DEPTH} deep at {self.shown(found)}")
        self.files += 1
        if self.files > MAX_FILES:
            raise self.refused(f"more than {MAX_FILES} files read for one project, at {self.shown(found)}")
        self.chain.append(found)

    def parse(self, path: Path) -> ET.Element:
        try:
            with path.open("rb") as file:
                size = os.fstat(file.fileno()).st_size
                if self.spent + size > MAX_PROJECT_CHARS:  # refused unread
                    raise self.refused(
                        f"{size} bytes to read, past the {MAX_PROJECT_CHARS} characters one project "
                        f"may read and expand ({self.spent} so far)"
                    )
                data = file.read(size)  # no more, should it grow
        except OSError as exc:
            raise PyfreightError(f"{path.name}: not a readable MSBuild project ({exc})") from None
        self.spend(len(data), "reading it")
        parser = ET.XMLParser(target=_BoundedTree(self.opened))
        try:
            parser.feed(data)
            root: ET.Element = parser.close()
        except ET.ParseError as exc:
            raise PyfreightError(f"{path.name}: not a readable MSBuild project ({exc})") from None
        return root

    def opened(self, depth: int) -> None:
        self.elements += 1
        if depth > MAX_ELEMENT_DEPTH:
            raise self.refused(f"elements nested more than {MAX_ELEMENT_DEPTH} deep")
        if self.elements > MAX_ELEMENTS:
            raise self.refused(f"more than {MAX_ELEMENTS} elements in the files of one project")

    def spend(self, size: int, what: str) -> None:
        self.spent += size
        if self.spent > MAX_PROJECT_CHARS:
            raise self.refused(
                f"{what}: more than {MAX_PROJECT_CHARS} characters read and expanded for one project"
            )

    def bounded(self, pieces: Iterable[str], what: str) -> str:
        """The pieces joined, refused as soon as they would pass MAX_VALUE_CHARS (re.sub or
        str.replace would build the whole first: a property doubled 31 times is 2 GB)."""
        kept, size = [], 0
        for piece in pieces:
            size += len(piece)
            if size > MAX_VALUE_CHARS:
                raise self.too_long(what)
            kept.append(piece)
        return "".join(kept)

    def too_long(self, what: str) -> ProjectRefused:
        return self.refused(f"{what} expands to more than {MAX_VALUE_CHARS} characters")

    def substitute(
        self, pattern: re.Pattern[str], text: str, value: Callable[[re.Match[str]], str], what: str
    ) -> str:
        """pattern.sub(value, text), bounded as it is built (a loop, not bounded(): this
        is the reader's busiest path), and counted in what the project expands."""
        if len(text) > MAX_VALUE_CHARS:  # as written
            raise self.too_long(what)
        pieces: list[str] = []
        size = last = 0
        for match in pattern.finditer(text):
            found = value(match)
            size += match.start() - last + len(found)
            if size > MAX_VALUE_CHARS:
                raise self.too_long(what)
            pieces += (text[last : match.start()], found)
            last = match.end()
        if size + len(text) - last > MAX_VALUE_CHARS:
            raise self.too_long(what)
        result = "".join([*pieces, text[last:]]) if pieces else text
        self.spend(len(result), what)
        return result

    def find(self, name: str, base: Path) -> Path | None:
        """The file or folder `name` (a Windows path, relative to `base`) names, when it
        is there inside the tree. Its parts are resolved on paper first, as Windows
        does: nothing outside the tree is asked after, nor a name of thousands of parts
        resolved one system call each; a name the system refuses (too long) is not there."""
        if not name:
            return None
        candidate = Path(os.path.normpath(base / PureWindowsPath(name).as_posix()))
        if not candidate.is_relative_to(self.root):
            return None
        self.questions += 1
        if self.questions > MAX_QUESTIONS:
            raise self.refused(f"more than {MAX_QUESTIONS} files asked after (Exists(), Import)")
        try:
            found = candidate.resolve() if candidate.exists() else None
        except OSError:
            return None
        return found if found is not None and found.is_relative_to(self.root) else None

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
                name = child.tag.removeprefix(NS)
                try:
                    if self.holds(child.get("Condition")):
                        self.assign(name, child.text or "")
                except Unevaluable:
                    if name.lower() not in self.fixed:  # maybe assigned, maybe not: unknown
                        self.project.properties[name.lower()] = None
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
            name = self.expand(raw, "an Import")
        except Unevaluable:
            return  # Visual Studio's own folders ($(VCTargetsPath), $(UserRootDir))
        found = self.find(name, self.chain[-1].parent)
        if found is None or not found.is_file():
            return
        self.read_file(found)
        self.project.properties["msbuildthisfiledirectory"] = str(importer.parent) + "\\"

    def assign(self, name: str, raw: str) -> None:
        if name.lower() in self.fixed:
            return
        try:
            self.project.properties[name.lower()] = self.expand(raw.strip(), f"property {name}")
        except Unevaluable:
            self.project.properties[name.lower()] = None

    def merge(
        self, into: dict[str, str | None], element: ET.Element, inherited: Mapping[str, str | None]
    ) -> None:
        """Sets each metadata of `element` in `into`; one this reader cannot evaluate (or
        that extends one it could not) is unknown (None), an error only when asked for."""
        for meta in element:
            name = meta.tag.removeprefix(NS)
            what = f"{element.tag.removeprefix(NS)} metadata {name}"
            try:
                if not self.holds(meta.get("Condition")):
                    continue
                earlier = inherited.get(name, "")
                if earlier is None and f"%({name})" in (meta.text or ""):
                    raise Unevaluable(name)
                text = " ".join((meta.text or "").split())
                into[name] = self.expand(self.bounded(_filled(text, f"%({name})", earlier or ""), what), what)
            except Unevaluable:
                into[name] = None

    def add_item(self, element: ET.Element) -> None:
        kind = element.tag.removeprefix(NS)
        defaults = self.project.definitions.get(kind, {})
        own: dict[str, str | None] = {}
        self.merge(own, element, defaults)
        what = f"the Include of {kind}"
        includes = split_list(self.expand_items(self.expand(element.get("Include", ""), what), what))
        if len(self.project.items) + len(includes) > MAX_ITEMS:
            raise self.refused(f"more than {MAX_ITEMS} items, adding {kind}")
        # one read-only mapping for the items of one element: a copy each would be
        # items times metadata
        metadata = MappingProxyType(own)
        added = [Item(kind=kind, include=include, metadata=metadata) for include in includes]
        self.project.items += added
        self.by_kind.setdefault(kind, []).extend(added)

    def expand_items(self, text: str, what: str) -> str:
        """@(Kind) as the includes of the items of that kind so far, ;-separated, and
        @(Kind->'...%(Identity)...') as each transformed; other metadata in a transform
        is not evaluated here."""

        def items(match: re.Match[str]) -> str:
            kind, transform = match.group(1), match.group(2)
            found = self.by_kind.get(kind, [])
            if transform is None:
                return self.bounded(_separated((i.include for i in found), ";"), what)
            if re.search(r"%\((?!Identity\))", transform):
                raise Unevaluable(
                    f"{self.project.path.name}: cannot evaluate the transform {_excerpt(match.group(0))}"
                )
            each = (self.bounded(_filled(transform, "%(Identity)", i.include), what) for i in found)
            return self.bounded(_separated(each, ";"), what)

        return self.substitute(ITEM_LIST, text, items, what) if "@(" in text else text

    def expand(self, text: str, what: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if not SIMPLE_NAME.match(name):
                raise Unevaluable(f"{self.project.path.name}: cannot evaluate $({_excerpt(name)})")
            found = self.project.properties.get(name.lower(), "")
            if found is None:
                raise Unevaluable(
                    f"{self.project.path.name}: property {name} is computed by MSBuild; pass it"
                )
            return found

        expanded = self.substitute(PROPERTY, text, value, what)
        if "$(" in expanded:  # a property function around a property: $([...]::Parse($(V)))
            raise Unevaluable(f"{self.project.path.name}: cannot evaluate {_excerpt(text)}")
        return expanded

    def holds(self, condition: str | None) -> bool:
        if condition is None or not condition.strip():
            return True
        if len(condition) > MAX_VALUE_CHARS:
            raise self.too_long("a condition")
        return _Condition(condition, self).evaluate()


class _Condition:
    """A recursive-descent reading of one Condition: or > and > not > comparison."""

    def __init__(self, text: str, reader: _Reader) -> None:
        self.text = text
        self.reader = reader
        self.depth = 0  # of parentheses, ! and calls, each a recursion here
        self.tokens: list[tuple[str, str]] = []
        position = 0
        while position < len(text.rstrip()):
            match = TOKEN.match(text, position)
            if not match or match.end() == position:
                raise Unevaluable(f"{reader.project.path.name}: cannot read condition {_excerpt(text)!r}")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            position = match.end()
        self.at = 0

    @contextmanager
    def nested(self) -> Iterator[None]:
        self.depth += 1
        if self.depth > MAX_CONDITION_DEPTH:
            raise self.reader.refused(f"a condition nested more than {MAX_CONDITION_DEPTH} deep")
        yield
        self.depth -= 1

    def evaluate(self) -> bool:
        result = self.either()
        if self.at != len(self.tokens):
            raise Unevaluable(
                f"{self.reader.project.path.name}: cannot read condition {_excerpt(self.text)!r}"
            )
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
            with self.nested():
                return not self.negation()
        return self.comparison()

    def comparison(self) -> bool:
        if self.peek() == ("op", "("):
            self.take()
            with self.nested():
                result = self.either()
            if self.take() != ("op", ")"):
                raise Unevaluable(
                    f"{self.reader.project.path.name}: unbalanced condition {_excerpt(self.text)!r}"
                )
            return result
        left = self.operand()
        if self.peek()[1] in ("==", "!="):
            operator = self.take()[1]
            right = self.operand()
            equal = left.lower() == right.lower()  # MSBuild compares strings without case
            return equal if operator == "==" else not equal
        if left.lower() in ("true", "false"):
            return left.lower() == "true"
        where = self.reader.project.path.name
        raise Unevaluable(f"{where}: {_excerpt(left)!r} is not true or false in {_excerpt(self.text)!r}")

    def operand(self) -> str:
        kind, text = self.take()
        if kind == "string":
            return self.reader.expand(text[1:-1], "a condition")
        if kind == "prop":
            return self.reader.expand(text, "a condition")
        if kind == "word" and text.lower() in ("exists", "hastrailingslash") and self.peek() == ("op", "("):
            self.take()
            with self.nested():
                argument = self.operand()
            if self.take() != ("op", ")"):
                raise Unevaluable(
                    f"{self.reader.project.path.name}: unbalanced condition {_excerpt(self.text)!r}"
                )
            if text.lower() == "hastrailingslash":
                return "true" if argument.endswith(("\\", "/")) else "false"
            return "true" if self._exists(argument) else "false"
        if kind == "word":
            return text
        raise Unevaluable(f"{self.reader.project.path.name}: cannot read condition {_excerpt(self.text)!r}")

    def _exists(self, name: str) -> bool:
        return self.reader.find(name, self.reader.root) is not None
