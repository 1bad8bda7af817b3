"""`pyfreight embed --memory-importer`: an interpreter whose standard library is packed
into its own read-only data and imported from memory (see docs/memory-importer.md).

The archive's own interpreter compiles the stdlib (so the bytecode matches its magic
number) into one blob; an assembly file `.incbin`s the blob; the importer module and a
main() that installs it before the first stdlib import are compiled against the
archive's headers; then everything links as `embed` links any interpreter."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pyfreight import memimport
from pyfreight.embed.link import EmbedPlan, Linker, build_libpython, link_executable
from pyfreight.errors import PyfreightError
from pyfreight.logs import say, tail


@dataclass(frozen=True)
class PackOptions:
    optimize: int = 0  # bytecode optimization level, as python -O / -OO
    sources: bool = True  # pack .py sources too: inspect.getsource and traceback lines
    apps: Sequence[Path] = field(default=())  # sys.path-like folders packed beside the stdlib


def pack_stdlib(plan: EmbedPlan, linker: Linker, options: PackOptions) -> Path:
    """Runs the packer with the archive's interpreter; returns the blob."""
    archive = plan.archive
    if not archive.python_exe.is_file():
        raise PyfreightError(
            f"{archive.python_exe}: the archive's interpreter is missing; is it a full archive?"
        )
    blob = linker.work / "stdlib.blob"
    command = [
        str(archive.python_exe),
        "-I",
        str(memimport.PACKER),
        "--stdlib",
        str(archive.stdlib_dir),
        "--out",
        str(blob),
        "--optimize",
        str(options.optimize),
    ]
    command += ["--sources"] if options.sources else []
    for app in options.apps:
        if not app.is_dir():
            raise PyfreightError(f"--app {app}: no such folder")
        command += ["--app", str(app.resolve())]
    say(f"embed: packing the stdlib with {archive.python_exe.name} (log {linker.log})")
    with linker.log.open("a") as log:
        result = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True)
        log.write(result.stdout)
    if result.returncode != 0:
        raise PyfreightError(f"embed: packing the stdlib failed; log {linker.log}:\n{tail(linker.log)}")
    say(f"embed: {result.stdout.strip().splitlines()[-1] if result.stdout.strip() else blob.name}")
    return blob


def link_memory_importer(
    plan: EmbedPlan, linker: Linker, output: Path, options: PackOptions, extra_flags: Sequence[str] = ()
) -> None:
    blob = pack_stdlib(plan, linker, options)
    asm = linker.work / "blob.S"
    asm.write_text(memimport.blob_asm(blob))
    cflags = ["-O2", "-fPIE", "-Wall", f"-I{plan.archive.include_dir}"]
    objects = []
    for source in (memimport.MAIN_C, memimport.MODULE_C):
        copy = linker.work / source.name
        copy.write_bytes(source.read_bytes())
        objects.append(linker.compile(copy, cflags))
    objects.append(linker.compile(asm, []))
    library = build_libpython(plan, linker)
    link_executable(plan, linker, library, output, objects, extra_flags)
