"""A Windows pgo build's training, which its build job cannot do itself (the build
container runs no Windows program): the instrumented interpreter's build job, then
CPython's PGO task (`python -m test --pgo`, as PCbuild's build.bat --pgo runs it) by that
interpreter under Wine in the target's runtime image, then llvm-profdata of the
compiler's LLVM merging what it wrote, in the build image. Both with no network."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from pyfreight.container.build_image import BuildImage
from pyfreight.container.build_job import BuildJob, container_user, run_build_job
from pyfreight.container.run import Mount, RunSpec, run
from pyfreight.cpython.options import INSTALL_PREFIX
from pyfreight.cpython.profiles import PGO_PROFILE_NAME
from pyfreight.cpython.progress import CPythonPhases
from pyfreight.errors import PyfreightError
from pyfreight.leftovers import owned
from pyfreight.logs import say
from pyfreight.paths import Workspace
from pyfreight.runners.wine import FOLDER, REGRTEST_SCRIPT, WineRunner, wine_path
from pyfreight.targets import Target

# CPython's tests under Wine need regrtest's harness adapted (in_container/regrtest_wine.py
# says how), and the script imports wine_process.py from beside it.
TREE = "instrumented"  # the instrumented tree, in the training folder
RAW = "profiles"  # where each instrumented image writes its counters, in that folder
# The PGO task, as CPython's own builds run it; a test stuck under Wine ends at the
# timeout and the training goes on with the next, as a failing test does.
TRAINING_ARGUMENTS = ("--pgo", "--timeout=300")
PROFDATA_INSIDE = "/profiles"


def train(
    instrumented: BuildJob,
    image: BuildImage,
    target: Target,
    jobs: int,
    epoch: int,
    ws: Workspace,
    log: Path,
    merged: Path,
) -> None:
    """Builds `instrumented`, trains it and merges its profiles into `merged` (which the
    caller hands to the optimized build)."""
    with (
        run_build_job(instrumented, image, target, jobs, epoch, ws, log, progress=CPythonPhases()) as built,
        tempfile.TemporaryDirectory(dir=ws.scratch, prefix=owned("pgo-training")) as tmp,
    ):
        folder = Path(tmp)
        shutil.copytree(built.output(INSTALL_PREFIX), folder / TREE, symlinks=True)
        shutil.copy2(REGRTEST_SCRIPT, folder / REGRTEST_SCRIPT.name)
        raw = folder / RAW
        raw.mkdir()
        for path in (folder, *folder.rglob("*")):
            if not path.is_symlink():
                path.chmod(0o755 if path.is_dir() or path.suffix in (".exe", ".dll") else 0o644)
        raw.chmod(0o777)  # written by Wine's user, then by the build image's
        say("PGO: training the instrumented interpreter under Wine (python -m test --pgo)")
        result = WineRunner(target).run_program(
            ws,
            folder,
            f"{TREE}/python.exe",
            [REGRTEST_SCRIPT.name, *TRAINING_ARGUMENTS],
            what="PGO training under Wine",
            output=log,
            # %m: one file per instrumented image (python.exe, python3XX.dll, …),
            # which every process of the training merges its counters into.
            env={"LLVM_PROFILE_FILE": wine_path(FOLDER, f"{RAW}/%m.profraw")},
            writable=True,
        )
        written = sorted(p.name for p in raw.glob("*.profraw"))
        if not written:
            raise PyfreightError(
                f"the instrumented interpreter's training (exit {result.returncode}) wrote no "
                f"profile; see {log}"
            )
        # As CPython's own profile-run, a failing test does not fail the training:
        # its counters are as good as a passing one's.
        say(f"PGO: training ended (exit {result.returncode}); merging {len(written)} profiles")
        _merge(raw, written, image, target, log)
        shutil.move(raw / PGO_PROFILE_NAME, merged)


def _merge(raw: Path, written: list[str], image: BuildImage, target: Target, log: Path) -> None:
    """llvm-profdata of the compiler's own LLVM (sysroot.zig.llvm), whose format clang
    reads, merges the raw profiles into one indexed profile."""
    if not target.toolchain.zig_llvm:
        raise PyfreightError(f"targets/{target.triple}.yaml names no sysroot.zig.llvm for llvm-profdata")
    spec = RunSpec(
        image=image.image_id,
        command=[
            f"llvm-profdata-{target.toolchain.zig_llvm}",
            "merge",
            f"--output={PROFDATA_INSIDE}/{PGO_PROFILE_NAME}",
            *(f"{PROFDATA_INSIDE}/{name}" for name in written),
        ],
        what="llvm-profdata merge of the PGO training's profiles",
        output=log,
        mounts=[Mount(raw, PROFDATA_INSIDE, read_only=False)],
        user=container_user(raw),
        name_hint="profdata",
    )
    run(spec)
