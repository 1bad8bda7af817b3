"""Every command line written in README.md and docs/*.md names subcommands, flags and
make targets that exist, so the documentation cannot drift from the CLI again. (The
commands themselves run, as people type them, in the CLI and container tests.)"""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import pytest

from pyfreight.cli import build_parser
from pyfreight.cpython.options import BuildOptions
from pyfreight.errors import PyfreightError
from pyfreight.targets import all_targets

ROOT = Path(__file__).resolve().parent.parent
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```[a-z]*\n(.*?)^```", re.M | re.S)
SPAN = re.compile(r"`([^`\n]+)`")


def _command_lines(text: str) -> list[str]:
    """Shell lines from fenced blocks (continuations joined) and inline code spans."""
    lines: list[str] = []
    for block in FENCE.findall(text):
        lines += [line.strip() for line in block.replace("\\\n", " ").splitlines()]
    prose = FENCE.sub("", text)
    lines += [span.replace("\\|", "|").strip() for span in SPAN.findall(prose)]
    return [line.removeprefix("$ ").split("#", 1)[0].strip() for line in lines]


def _documented(program: str) -> list[tuple[str, str]]:
    found = []
    for doc in DOCUMENTS:
        for line in _command_lines(doc.read_text()):
            words = line.split()
            if words and (words[0] == program or words[0].endswith(f"/{program}")):
                found.append((doc.name, line))
    return found


PYFREIGHT_LINES = _documented("pyfreight")
MAKE_LINES = _documented("make")


def _subparsers() -> dict:
    parser = build_parser()
    action = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return action.choices


def test_the_documents_name_commands():
    """The extraction itself: README's table alone names a dozen subcommands."""
    assert len({line.split()[1] for _, line in PYFREIGHT_LINES if len(line.split()) > 1}) >= 12
    assert any("linux-x86_64-pgo" in line for _, line in MAKE_LINES)


@pytest.mark.parametrize(("doc", "line"), PYFREIGHT_LINES, ids=[line for _, line in PYFREIGHT_LINES])
def test_pyfreight_lines_name_real_subcommands_and_flags(doc, line):
    words = line.split()[1:]
    top_level = {o for a in build_parser()._actions for o in a.option_strings}
    while words and words[0].startswith("-"):  # options of pyfreight itself, before the subcommand
        assert words[0] in top_level, f"{doc}: `{line}`: pyfreight has no option {words[0]}"
        words = words[1:]
    if not words or words[0] in ("…", "(or"):
        return  # "pyfreight …" as a placeholder, or prose about the program itself
    subcommands = _subparsers()
    assert words[0] in subcommands, f"{doc}: `{line}` names no subcommand {words[0]!r}"
    options = {o for a in subcommands[words[0]]._actions for o in a.option_strings}
    flags = re.findall(r"(?<![\w/.-])(--?[a-zA-Z][\w-]*)", " ".join(words[1:]))
    unknown = [f for f in flags if f not in options]
    assert not unknown, f"{doc}: `{line}`: pyfreight {words[0]} has no {', '.join(unknown)}"
    for value in _option_values(words[1:]):
        try:
            BuildOptions.parse(value)
        except PyfreightError as refused:
            raise AssertionError(f"{doc}: `{line}`: {refused}") from None


def _option_values(words: list[str]) -> list[str]:
    """The build options a line names with --options (a comma-separated list), leaving
    out placeholders (X, OPTIONS) and the usage's alternatives (a|b, [..])."""
    values = [after for flag, after in itertools.pairwise(words) if flag == "--options"]
    return [
        v for value in values for v in value.split(",") if v and v[0].islower() and not set(v) & set("|[]{}…")
    ]


def _make_targets() -> set[str]:
    """The Makefile's targets; a pattern rule (%-pgo) stands for every target of
    targets/*.yaml whose make name fills it (linux-x86_64-pgo)."""
    text = (ROOT / "Makefile").read_text()
    explicit = set(re.findall(r"^([a-zA-Z0-9_.-]+):", text, re.M))
    patterns = re.findall(r"^(%-[a-z]+):", text, re.M)
    made = {p.replace("%", t.make_name) for p in patterns for t in all_targets().values()}
    return explicit | made


def _expand_braces(word: str) -> list[str]:
    match = re.search(r"\{([^{}]+)\}", word)
    if not match:
        return [word]
    return [
        w for alt in match.group(1).split(",") for w in _expand_braces(word.replace(match.group(0), alt, 1))
    ]


@pytest.mark.parametrize(("doc", "line"), MAKE_LINES, ids=[line for _, line in MAKE_LINES])
def test_make_lines_name_real_targets_and_variables(doc, line):
    makefile = (ROOT / "Makefile").read_text()
    targets = _make_targets()
    for word in shlex.split(line)[1:]:
        if "=" in word:
            variable = word.split("=", 1)[0]
            assert re.search(rf"\b{variable}\b", makefile), (
                f"{doc}: `{line}`: the Makefile reads no {variable}"
            )
        elif not word.startswith("-"):
            for target in _expand_braces(word):
                assert target in targets, f"{doc}: `{line}`: no make target {target!r}"
