"""Makes an installed CPython tree relocatable and free of build-time paths.

After `make install` into the container's /install, the tree still names the build
environment in a few text files: the compiler command with its sysroot, our
dependency prefix, lld, the path mapping flag, and the install prefix. This module
rewrites them so that sysconfig describes a plain `cc` build on the user's machine,
and so that prefixes are computed from where the tree is at run time."""

from __future__ import annotations

import json
import os
import re
from functools import cache
from pathlib import Path

from pyfreight import toolchain
from pyfreight.cpython.options import INSTALL_PREFIX
from pyfreight.errors import PyfreightError
from pyfreight.platforms import installed_python_name
from pyfreight.targets import all_targets


@cache
def _compilers() -> tuple[dict[str, str], re.Pattern[str]]:
    """The build's compilers, of every target, and what each becomes: the host's cc/c++
    (matched longest first). Computed on first use, not at import: it reads the targets,
    which every command importing this module would otherwise pay for at start."""
    commands: dict[str, str] = {}
    for found in all_targets().values():
        cc, cxx = toolchain.compiler_commands(found)
        commands |= {cc: "cc", cxx: "c++"}
    return commands, re.compile("|".join(re.escape(c) for c in sorted(commands, key=len, reverse=True)))


# What other build-time strings become, longest first.
REPLACEMENTS: tuple[tuple[str, str], ...] = (
    (f"/usr/lib/llvm-{toolchain.LLVM}/bin/llvm-ar", "ar"),
    (f"llvm-ar-{toolchain.LLVM}", "ar"),
    (f"-ffile-prefix-map={toolchain.WORK_DIR}=.", ""),
    ("-fuse-ld=lld", ""),
    (f"-L{toolchain.PREFIX}/lib", ""),
    (f"-I{toolchain.PREFIX}/include/ncursesw", ""),
    (f"-I{toolchain.PREFIX}/include/uuid", ""),
    (f"-I{toolchain.PREFIX}/include", ""),
    (f"--sysroot={toolchain.SYSROOT}", ""),
)
# Any of these left in a text file of the tree is an error.
FORBIDDEN = (toolchain.PREFIX, toolchain.WORK_DIR, toolchain.SYSROOT, "/inputs/")
PREFIX_TOKEN = "@PYFREIGHT_PREFIX@"

SYSCONFIG_TRAILER = f'''

# pyfreight: the tree is relocatable, so the install prefix is where it is now.
def _pyfreight_relocate(value, _prefix=__import__("sys").base_prefix):
    return value.replace("{PREFIX_TOKEN}", _prefix) if isinstance(value, str) else value


build_time_vars = {{k: _pyfreight_relocate(v) for k, v in build_time_vars.items()}}
'''

# A shebang that finds the interpreter from the script's own real location, wherever
# the tree is: `{python}` is the interpreter's path relative to the script's folder.
# realpath without `--`: busybox's (Alpine's) takes it for a file name.
SHEBANG_TRAMPOLINE = (
    '#!/bin/sh\n\'\'\'exec\' "$(dirname -- "$(realpath "$0")")/{python}" "$0" "$@"\n\' \'\'\'\n'
)

# The install prefix as a path of its own, in any text (a shebang, `-I/install/include`,
# `"prefix": "/install"`, `--prefix=/install`), but not inside another path or name
# (/usr/bin/install, commands/install.py, install-sh).
INSTALL_PATH = re.compile(rf"(?:(?<![\w.\-/~])|(?<=-[IL])){re.escape(INSTALL_PREFIX)}(?![\w.\-])")

# bin/python3.X-config (CPython's Misc/python-config.sh.in, the same in 3.13 to 3.15)
# finds its prefix with unquoted command substitutions, so from a tree whose path has a
# space it prints `-I/include/python3.X`; and it keeps the build prefix as the pattern it
# rewrites its paths with. The function becomes a quoted one that also follows a symlink
# to the script from another folder; the pattern becomes our token, which no path holds.
CONFIG_SH_INSTALLED_PREFIX = """installed_prefix ()
{
    RESULT=$(dirname $(cd $(dirname "$1") && pwd -P))
    if which readlink >/dev/null 2>&1 ; then
        if readlink -f "$RESULT" >/dev/null 2>&1; then
          RESULT=$(readlink -f "$RESULT")
        fi
    fi
    echo $RESULT
}
"""
CONFIG_SH_RELOCATABLE_PREFIX = """installed_prefix ()
{
    # pyfreight: the folder above the real bin/ of this script, quoted (spaces);
    # realpath without --, which busybox's takes for a file name.
    dirname -- "$(dirname -- "$(realpath "$1")")"
}
"""


# The source folder CPython was built in, recorded as srcdir, abs_builddir and the like.
_SOURCE_TREE = re.compile(rf"{re.escape(toolchain.WORK_DIR)}/Python-[^/'\" ]+")
# Any remaining word naming the build environment (configure arguments such as
# --with-openssl=/tools/deps, -I flags of our dependencies) is dropped.
_BUILD_WORD = re.compile(
    r"[^\s'\"]*(?:" + "|".join(re.escape(p) for p in (toolchain.PREFIX, toolchain.WORK_DIR)) + r")[^\s'\"]*"
)


def scrub_flags(text: str, source_tree: str = "") -> str:
    """Host-neutral flags; the source folder becomes `source_tree`; other words that
    name the build environment are dropped."""
    commands, compiler = _compilers()
    text = compiler.sub(lambda m: commands[m[0]], text)
    for old, new in REPLACEMENTS:
        text = text.replace(old, new)
    text = _BUILD_WORD.sub("", _SOURCE_TREE.sub(source_tree, text))
    # Collapse the doubled spaces removed flags leave behind, inside quoted values.
    return re.sub(r"(?<=\S)  +(?=\S)", " ", text)


def replace_prefix(text: str, replacement: str) -> str:
    """Replaces the install prefix, but not e.g. /usr/bin/install."""
    guarded = text.replace("/bin/install", "\0BIN_INSTALL\0")
    guarded = re.sub(rf"{re.escape(INSTALL_PREFIX)}(?=[/'\" :;]|$)", replacement, guarded, flags=re.M)
    return guarded.replace("\0BIN_INSTALL\0", "/bin/install")


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def _rewrite_shebang(path: Path, python: str) -> None:
    """A `#!/install/bin/…` script runs `python` (a path relative to the script's
    folder) instead."""
    text = _text(path)
    if text and text.startswith(f"#!{INSTALL_PREFIX}/bin/"):
        path.write_text(SHEBANG_TRAMPOLINE.format(python=python) + text.split("\n", 1)[1])


def _relocatable_config_script(text: str, path: Path) -> str:
    if CONFIG_SH_INSTALLED_PREFIX not in text:
        raise PyfreightError(f"{path}: its installed_prefix function is not the one relocate.py rewrites")
    text = text.replace(CONFIG_SH_INSTALLED_PREFIX, CONFIG_SH_RELOCATABLE_PREFIX)
    return text.replace(f'prefix="{INSTALL_PREFIX}"', f'prefix="{PREFIX_TOKEN}"')


def _relative_build_details(text: str, path: Path, tree: Path) -> str:
    """PEP 739 lets build-details.json give base_prefix relative to the file's folder
    and the other paths relative to base_prefix (what CPython's own
    generate-build-details.py --relative-paths writes), so it stays true when the tree
    moves."""
    data = json.loads(text)
    if data.get("base_prefix") != INSTALL_PREFIX:
        raise PyfreightError(f"{path}: base_prefix is {data.get('base_prefix')!r}, not {INSTALL_PREFIX}")
    data["base_prefix"] = "/".join(".." for _ in path.parent.relative_to(tree).parts)
    keys = ("base_interpreter", "libpython.dynamic", "libpython.dynamic_stableabi", "libpython.static")
    for key in (*keys, "c_api.headers", "c_api.pkgconfig_path"):
        *parents, child = key.split(".")
        holder = data
        for part in parents:
            holder = holder.get(part, {})
        value = holder.get(child)
        if isinstance(value, str) and value.startswith(f"{INSTALL_PREFIX}/"):
            holder[child] = "." + value.removeprefix(INSTALL_PREFIX)
    return json.dumps(data, indent=2) + "\n"


def make_relocatable(tree: Path, version: str) -> list[Path]:
    """Rewrites the tree's build-time paths; returns the Python modules it rewrote,
    whose bytecode must be compiled again (pyfreight.cpython.recompile)."""
    python = installed_python_name(tree)
    rewritten = []
    for script in sorted((tree / "bin").iterdir()):
        if script.is_file() and not script.is_symlink():
            _rewrite_shebang(script, python)
    # python-config.py beside the config Makefile: the interpreter is three folders up.
    for script in sorted((tree / "lib" / python).glob("config-*/python-config.py")):
        _rewrite_shebang(script, f"../../../bin/{python}")
    for data in sorted((tree / "lib" / python).glob("_sysconfigdata_*.py")):
        text = replace_prefix(scrub_flags(data.read_text(), INSTALL_PREFIX), PREFIX_TOKEN)
        data.write_text(text + SYSCONFIG_TRAILER)
        rewritten.append(data)
    # The JSON copy of the same variables cannot compute anything: the install prefix is
    # the token that the module above replaces with sys.base_prefix at import, for
    # tools that read the file to do the same, rather than a /install no user has.
    for vars_json in sorted((tree / "lib" / python).glob("_sysconfig_vars_*.json")):
        vars_json.write_text(replace_prefix(scrub_flags(vars_json.read_text()), PREFIX_TOKEN))
    for makefile in sorted((tree / "lib" / python).glob("config-*/Makefile")):
        text = replace_prefix(scrub_flags(makefile.read_text(), INSTALL_PREFIX), "$(PYFREIGHT_PREFIX)")
        head = "# pyfreight: the prefix is three folders above this Makefile.\n"
        head += "PYFREIGHT_PREFIX := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../../..)\n"
        makefile.write_text(head + text)
    for pc in sorted((tree / "lib" / "pkgconfig").glob("*.pc")):
        pc.write_text(replace_prefix(scrub_flags(pc.read_text()), "${pcfiledir}/../.."))
    for config in sorted((tree / "bin").glob("python*-config")):
        if not config.is_symlink():
            config.write_text(_relocatable_config_script(scrub_flags(config.read_text()), config))
    for setup in sorted((tree / "lib" / python).glob("config-*/Setup*")):
        setup.write_text(scrub_flags(setup.read_text()))
    for build_details in sorted((tree / "lib" / python).glob("build-details.json")):
        text = scrub_flags(build_details.read_text())
        build_details.write_text(_relative_build_details(text, build_details, tree))
    _link_duplicate_static_library(tree, python)
    _one_interpreter_file(tree)
    _link_python_names(tree, python)
    leftovers = find_build_paths(tree)
    if leftovers:
        raise PyfreightError("build-time paths remain in the install tree:\n  " + "\n  ".join(leftovers[:30]))
    return rewritten


def _one_interpreter_file(tree: Path) -> None:
    """`make install` of a free-threaded or debug build installs the interpreter as
    python3.14t or python3.14d and hard-links python3.14 to it. An archive stores a hard
    link as a second regular file (formats/tarball.py): the shorter name becomes a
    symlink to the interpreter instead, so the archive carries it once and every name
    resolves to the one file."""
    bin_dir = tree / "bin"
    interpreters = [
        path
        for path in sorted(bin_dir.glob("python3.*"))
        if path.is_file() and not path.is_symlink() and not path.name.endswith("-config")
    ]
    for name in interpreters:
        for longer in interpreters:
            if longer.name.startswith(name.name) and longer != name and os.path.samefile(name, longer):
                name.unlink()
                name.symlink_to(longer.name)
                break


def _link_python_names(tree: Path, python: str) -> None:
    """bin/python3 and bin/python name the interpreter too (make install makes only
    python3), as installers and users expect of a standalone Python."""
    for name in ("python3", "python"):
        link = tree / "bin" / name
        if not link.exists() and not link.is_symlink():
            link.symlink_to(python)


def _link_duplicate_static_library(tree: Path, python: str) -> None:
    """`make install` puts libpython's static library both in lib/ and in the config
    folder (LIBPL); keep one copy, the other a relative symlink to it."""
    for copy in sorted((tree / "lib").glob("libpython3*.a")):
        for original in sorted((tree / "lib" / python).glob(f"config-*/{copy.name}")):
            if not copy.is_symlink() and copy.read_bytes() == original.read_bytes():
                copy.unlink()
                copy.symlink_to(original.relative_to(copy.parent))


def find_build_paths(tree: Path) -> list[str]:
    """Text files of the tree that still name the build environment: the paths of
    FORBIDDEN anywhere, and the install prefix as a path (INSTALL_PATH), a shebang's
    included. The prefix needs the pattern: as a plain substring, /install is in
    /usr/bin/install, which sysconfig rightly keeps."""
    found = []
    for path in sorted(tree.rglob("*")):
        if path.is_file() and not path.is_symlink() and path.suffix not in (".pyc",):
            text = _text(path)
            if text is None:
                continue
            hits = [(s, text.find(s)) for s in FORBIDDEN]
            # The plain substring first: the pattern's look-behind tried at every
            # position of every file took seconds of each validate.
            if INSTALL_PREFIX in text and (match := INSTALL_PATH.search(text)):
                hits.append((INSTALL_PREFIX, match.start()))
            for s, at in hits:
                if at >= 0:
                    context = text[max(0, at - 40) : at + 40].replace("\n", " ")
                    found.append(f"{path.relative_to(tree)}: {s} in …{context}…")
    return found
