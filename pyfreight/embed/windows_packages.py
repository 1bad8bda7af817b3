"""A Windows application's third-party packages: the archive's pip cannot reach an
index under Wine (its container has no network), so this machine's pip downloads the
target's wheels (the tags PYTHON.json gives) and the archive's pip installs them under
Wine from that folder alone, as `install_third_party` does for an archive that runs here."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pyfreight.embed.application import check_package_inputs, run_pip
from pyfreight.embed.archive_python import run_archive_python
from pyfreight.errors import PyfreightError
from pyfreight.logs import say, tail
from pyfreight.paths import Workspace
from pyfreight.python_json import Distribution

PIP_QUIET = ["--disable-pip-version-check", "--no-input"]


def download_wheels(archive: Distribution, requirements: Path, wheels: Path, log: Path) -> None:
    """The requirements' wheels for the archive's interpreter and platform, into `wheels`
    (whose given wheels satisfy what they can), through pip's own configuration."""
    document = archive.document
    platform = str(document["python_platform_tag"]).replace("-", "_").replace(".", "_")
    command = [sys.executable, "-m", "pip", "download", *PIP_QUIET, "--only-binary", ":all:"]
    command += ["--dest", str(wheels), "--find-links", str(wheels), "--platform", platform]
    command += ["--python-version", archive.python_major_minor_version, "--implementation", "cp"]
    # PYTHON.json's python_abi_tag holds the ABI flags ("" or "t"); a wheel's ABI tag is
    # cp314 or cp314t.
    version_abi = f"cp{archive.python_major_minor_version.replace('.', '')}{document['python_abi_tag']}"
    for abi in (version_abi, "abi3", "none"):
        command += ["--abi", abi]
    command += ["-r", str(requirements.resolve())]
    say(f"embed: downloading the application's {platform} wheels with this machine's pip (log {log})")
    run_pip(command, "download the application's wheels", log)


def install_offline(
    archive: Distribution,
    work: Path,
    given: list[Path],
    requirements: Path | None,
    site: Path,
    log: Path,
    ws: Workspace,
) -> None:
    """pip install --target `site` (inside `work`) by the archive's interpreter where its
    runner runs it (under Wine, with no network), offline, from the given wheels and
    those the requirements download."""
    check_package_inputs(given, requirements)
    wheels = work / "wheels"
    shutil.rmtree(wheels, ignore_errors=True)
    wheels.mkdir()
    for wheel in given:
        shutil.copyfile(wheel, wheels / wheel.name)
    if requirements is not None:
        download_wheels(archive, requirements, wheels, log)
    arguments: list[str | Path] = ["-I", "-m", "pip", "install", *PIP_QUIET, "--target", site]
    arguments += ["--no-index", "--find-links", wheels, "--only-binary", ":all:", "--no-compile"]
    # What the requirements resolved to is what this machine's pip downloaded: those wheels
    # are installed by name, so the requirements file (and the folder it is in, which
    # Wine's user may not be allowed to read) never goes into the container.
    arguments += ["--no-warn-script-location", *sorted(wheels.glob("*.whl"))]
    say(f"embed: installing the application's packages with the archive's pip under Wine (log {log})")
    with log.open("a") as out:
        returncode, stdout = run_archive_python(archive, ws, work, arguments, out)
        out.write(stdout)
    if returncode != 0:
        raise PyfreightError(
            f"embed: pip could not install the application's packages; log {log}:\n{tail(log)}"
        )


def refuse_compiled(on_disk: Path, archive: Distribution) -> None:
    """A compiled module (.pyd) imports python3XX.dll by name, which a single-file
    program does not have beside it."""
    compiled = sorted(p.name for p in on_disk.iterdir() if not p.name.endswith(".dist-info"))
    if compiled:
        raise PyfreightError(
            f"{', '.join(compiled)}: compiled modules (.pyd) load only beside "
            f"python{archive.python_major_minor_version.replace('.', '')}.dll, which a single-file "
            "Windows program does not ship; give pure-Python packages, or use the install_only archive"
        )
