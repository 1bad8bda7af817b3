"""`pyfreight embed`: a custom interpreter (or static libpython) linked from a full
archive alone, the way packers consume python-build-standalone archives.

Everything comes from PYTHON.json: the core objects, each chosen extension's objects
and link annotations (system libraries by name, shipped static libraries by path), the
inittab compile flags and the object format. Nothing is read from build/; the host's C
compiler, or the target's pinned zig, links. A container runs only the archive's own
interpreter where this machine cannot run it directly (a Windows archive's, under
Wine: embed/archive_python.py), to compile the stdlib it packs and to run pip for an
application's packages."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pyfreight.embed.archive import open_archive
from pyfreight.embed.host_toolchain import find_toolchain
from pyfreight.embed.link import (
    LOG_NAME,
    Linker,
    build_libpython,
    link_executable,
    plan_embed,
    self_contained_library,
)
from pyfreight.embed.memory import PackOptions, link_memory_importer, stage_memory_importer
from pyfreight.embed.zig import pinned_zig
from pyfreight.errors import PyfreightError
from pyfreight.formats.safe_archive import DEFAULT_LIMITS, Limits
from pyfreight.leftovers import remove_tree, scratch_folder
from pyfreight.logs import say
from pyfreight.paths import Workspace, default_workspace
from pyfreight.platforms import platform_of
from pyfreight.targets import Target

# Marks a --work-dir as embed's own, which a later embed may empty.
WORK_MARKER = ".pyfreight-embed-work"

MAIN_SOURCE = """\
/* The interpreter's main(), as CPython's Programs/python.c. */
#include "Python.h"

int main(int argc, char **argv) { return Py_BytesMain(argc, argv); }
"""


def _check_cross_compiler(target: Target, cc: str | None, archive: Path) -> None:
    """An archive for a machine other than this one links with a compiler for that
    machine: the target's pinned zig, or one only the user can name (the host's cc would
    fail on the first object)."""
    if target.native or target.toolchain.zig is not None or cc or os.environ.get("CC"):
        return
    cross = target.toolchain.cross_cc
    hint = (
        f", e.g. --cc {cross.command} (Debian: apt-get install {' '.join(cross.debian_packages)})"
        if cross
        else ""
    )
    raise PyfreightError(f"{archive.name} is for {target.triple}: name a compiler that links for it{hint}")


@dataclass(frozen=True)
class EmbedResult:
    output: Path
    extensions: list[str]
    dropped: list[str]
    toolchain: str
    link_line: str  # how a program links the static library (for --emit-lib)
    packages: Path | None = None  # the application's packages folder beside the executable


def work_folder(path: Path) -> Path:
    """--work-dir, made ready: a new or empty folder is marked as embed's; one embed marked
    earlier is emptied; any other is refused (it may hold the user's files)."""
    if path.is_symlink() or (path.exists() and not path.is_dir()):
        raise PyfreightError(f"--work-dir {path}: not a folder; name a new or empty folder")
    if path.is_dir() and any(path.iterdir()):
        if not (path / WORK_MARKER).is_file():
            raise PyfreightError(
                f"--work-dir {path}: holds files pyfreight embed did not put there; "
                "name a new or empty folder"
            )
        for child in path.iterdir():
            if child.name != WORK_MARKER:
                remove_tree(child)
    path.mkdir(parents=True, exist_ok=True)
    (path / WORK_MARKER).write_text("a work folder of pyfreight embed, emptied by the next one\n")
    return path


@contextlib.contextmanager
def log_kept_on_failure(log: Path, kept: Path) -> Iterator[None]:
    """A failure names its log, which in a scratch folder would go with the folder: the log
    is copied out first, to `kept` (in the workspace's logs), and the message names it."""
    try:
        yield
    except PyfreightError as error:
        if not log.is_file():
            raise
        kept.parent.mkdir(parents=True, exist_ok=True)
        partial = kept.with_name(kept.name + ".partial")
        shutil.copyfile(log, partial)
        os.replace(partial, kept)
        raise PyfreightError(str(error).replace(str(log), str(kept))) from None


def embed(
    archive_path: Path,
    output: Path,
    selection: str | None = None,
    cc: str | None = None,
    emit_lib: bool = False,
    keep_work: Path | None = None,
    memory: PackOptions | None = None,
    pie: bool | None = None,
    strip: bool = False,
    limits: Limits = DEFAULT_LIMITS,
    ws: Workspace | None = None,
) -> EmbedResult:
    """Links an interpreter (or with emit_lib just libpython.a) from `archive_path`; with
    `memory`, one that imports its packed stdlib from memory. `pie` (default: as the
    archive's own interpreter) chooses a PIE or a position-dependent executable: no
    ASLR for its own code, but none of the ~70,000 relative relocations a PIE applies
    at every start. `strip` drops the debug info the
    archive's objects carry (about half of an interpreter's size). `selection` (default:
    what an application reaches, else all) names the extension modules. `ws` (default:
    the checkout's) holds the pinned compiler of a target that has one."""
    ws = ws or default_workspace()
    output = output.resolve()
    if not output.parent.is_dir():
        raise PyfreightError(f"-o {output}: folder {output.parent} does not exist")
    kept_log = ws.logs / LOG_NAME  # the last failed embed's
    with scratch_folder("pyfreight-embed-") as scratch, log_kept_on_failure(scratch / LOG_NAME, kept_log):
        work = work_folder(keep_work) if keep_work else scratch
        if memory and emit_lib:
            raise PyfreightError(
                "--memory-importer builds an executable; it does not combine with --emit-lib"
            )
        archive = open_archive(archive_path, work / "archive", whole_tree=memory is not None, limits=limits)
        _check_cross_compiler(archive.build.target, cc, archive_path)
        if pie is None:
            # Static code objects hold about a million pointers a PIE would relocate at every start.
            # as the archive's own interpreter is (its build options say; validate holds them)
            pie = archive.build.options.codegen.pie and not (memory is not None and memory.static_code)
        application = memory is not None and memory.main is not None
        target = archive.build.target
        platform = platform_of(target)
        extra = platform.program_flags(pie, strip, application)
        pinned = (
            pinned_zig(target, ws)
            if target.toolchain.zig is not None and not (cc or os.environ.get("CC"))
            else None
        )
        toolchain = find_toolchain(archive.object_file_format, cc, work, pinned, platform)
        linker = Linker(toolchain, work)
        staged = stage_memory_importer(archive, linker, output, memory, ws) if memory is not None else None
        reached = staged.extensions(archive) if staged is not None else None
        plan = plan_embed(archive, selection or reached or "all", toolchain.nm)
        kept = f"{len(plan.extensions)} extension modules, {len(plan.dropped)} left out"
        say(f"embed: {kept}; {toolchain.describe()}")
        if memory is not None and staged is not None:
            packages = link_memory_importer(plan, linker, output, memory, staged, extra, ws)
            return EmbedResult(
                output, [e.name for e in plan.extensions], plan.dropped, toolchain.describe(), "", packages
            )
        library = build_libpython(plan, linker)
        threads = list(platform.thread_flags)
        link_line = " ".join([output.name, *(f"-l{n}" for n in plan.inputs.system_libraries), *threads])
        if emit_lib:
            self_contained_library(linker, [library, *plan.inputs.static_libraries], output)
        else:
            main_c = work / "main.c"
            main_c.write_text(MAIN_SOURCE)
            main_o = linker.compile(main_c, ["-O2", "-fPIE", f"-I{archive.include_dir}"])
            link_executable(plan, linker, library, output, [main_o], extra)
        return EmbedResult(
            output=output,
            extensions=[e.name for e in plan.extensions],
            dropped=plan.dropped,
            toolchain=toolchain.describe(),
            link_line=link_line,
        )
