"""pip in the Windows tree: windows/install-pip.py lays out the pip that each CPython
source bundles, with console scripts made by pip's own distlib from the launcher the
target file pins, and validate's PE rules judge the launchers by their pinned hashes and
each console script by its launcher and shebang. Real sources: the pinned CPython
tarballs (sha256-verified) and the pip wheels inside them."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from pyfreight.cpython.versions import load_versions
from pyfreight.paths import REPO_ROOT, default_workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import all_targets
from pyfreight.verify.pe_rules import check_pe_tree

WINDOWS = next(t for t in all_targets().values() if t.binary_format == "pe" and t.pe.machine == "AMD64")
LAUNCHERS = WINDOWS.pe.launchers
INSTALL_PIP = REPO_ROOT / "windows" / "install-pip.py"
_, VERSIONS = load_versions()
# The CPython releases the Windows target builds.
WINDOWS_MINORS = sorted(minor for minor in VERSIONS if minor not in WINDOWS.builds.unavailable_versions)


def _bundled_pip(minor: str) -> tuple[str, bytes]:
    """The name and bytes of the pip wheel the pinned CPython source bundles."""
    src = VERSIONS[minor]
    tarball = fetch_source(src.source, default_workspace().downloads, log=lambda m: None)
    with tarfile.open(tarball) as archive:
        for member in archive:
            if member.name.startswith(f"{src.top_dir}/Lib/ensurepip/_bundled/pip-"):
                extracted = archive.extractfile(member)
                assert extracted is not None
                return Path(member.name).name, extracted.read()
    raise AssertionError(f"no pip wheel in {src.source.file}")


@pytest.fixture(scope="module", params=WINDOWS_MINORS)
def bundled_pip(request) -> tuple[str, str, bytes]:
    return (request.param, *_bundled_pip(request.param))


def _install(tree: Path, minor: str, wheel: tuple[str, bytes], epoch: str = "1754346000") -> str:
    bundled = tree / "Lib/ensurepip/_bundled"
    bundled.mkdir(parents=True)
    (bundled / wheel[0]).write_bytes(wheel[1])
    (tree / "Lib/site-packages").mkdir()
    (tree / "Scripts").mkdir()
    assert LAUNCHERS is not None
    env = {"PATH": os.environ["PATH"], "SOURCE_DATE_EPOCH": epoch}
    command = [sys.executable, "-B", "-I", str(INSTALL_PIP), str(tree), minor]
    ran = subprocess.run(
        [*command, LAUNCHERS.console, LAUNCHERS.interpreter],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    return ran.stdout


def test_every_windows_release_bundles_the_pinned_launchers(bundled_pip):
    """The target file's pins are those of the launchers each built release's pip carries:
    a release whose pip changes them fails here, naming the file."""
    assert LAUNCHERS is not None
    _, name, wheel = bundled_pip
    folder = LAUNCHERS.folder.removeprefix("Lib/site-packages/") + "/"
    with zipfile.ZipFile(io.BytesIO(wheel)) as archive:
        found = {
            Path(member).name: archive.read(member)
            for member in archive.namelist()
            if member.startswith(folder) and member.endswith(".exe")
        }
    assert sorted(found) == sorted(LAUNCHERS.sha256), name
    for file, data in found.items():
        pinned = (LAUNCHERS.sha256[file], LAUNCHERS.size[file])
        assert (hashlib.sha256(data).hexdigest(), len(data)) == pinned, file


def test_pip_is_laid_out_as_on_windows_and_passes_the_pe_rules(tmp_path: Path, bundled_pip):
    """The package and its dist-info in Lib/site-packages; pip.exe, pip3.exe and pip3.X.exe
    in Scripts, each the launcher, the relative shebang and a zip running pip's main;
    RECORD lists every file with its hash; the PE rules find no problem."""
    minor, name, wheel = bundled_pip
    said = _install(tmp_path, minor, (name, wheel))
    scripts = sorted(p.name for p in (tmp_path / "Scripts").iterdir())
    assert scripts == sorted(["pip.exe", "pip3.exe", f"pip{minor}.exe"]), said
    assert LAUNCHERS is not None
    launcher = (tmp_path / LAUNCHERS.folder / LAUNCHERS.console).read_bytes()
    data = (tmp_path / "Scripts/pip.exe").read_bytes()
    assert data.startswith(launcher + b"#!<launcher_dir>\\..\\python.exe\n")
    with zipfile.ZipFile(io.BytesIO(data[len(launcher) :].split(b"\n", 1)[1])) as script:
        main = script.read("__main__.py").decode()
    assert "from pip._internal.cli.main import main" in main and "sys.exit(main())" in main

    dist_info = next((tmp_path / "Lib/site-packages").glob("pip-*.dist-info"))
    assert (dist_info / "INSTALLER").read_bytes() == b"pip\n"
    record = dict(line.split(",", 1) for line in (dist_info / "RECORD").read_text().splitlines())
    for path, hashed in record.items():
        if path.endswith("/RECORD"):
            assert hashed == ","
            continue
        content = (tmp_path / "Lib/site-packages" / path).resolve().read_bytes()
        digest = base64.urlsafe_b64encode(hashlib.sha256(content).digest()).rstrip(b"=").decode()
        assert hashed == f"sha256={digest},{len(content)}", path
    assert f"../../Scripts/pip{minor}.exe" in record

    facts, problems = check_pe_tree(tmp_path, WINDOWS)
    assert problems == [] and len(facts) == len(LAUNCHERS.sha256) + 3


def test_the_console_scripts_reproduce_and_their_zip_carries_the_source_date(tmp_path: Path):
    """Two installs give the same bytes; a different SOURCE_DATE_EPOCH changes the
    scripts' zip (the time is the source's, not the clock's)."""
    minor = WINDOWS_MINORS[-1]
    wheel = _bundled_pip(minor)
    made = []
    for run, epoch in (("a", "1754346000"), ("b", "1754346000"), ("c", "1700000000")):
        _install(tmp_path / run, minor, wheel, epoch)
        made.append((tmp_path / run / "Scripts/pip.exe").read_bytes())
    assert made[0] == made[1] and made[0] != made[2]


def test_a_changed_launcher_or_an_absolute_shebang_is_named(tmp_path: Path):
    """A launcher not as pinned is named with the fix; a console script naming python.exe
    by an absolute path (what pip would write at build time) is refused: it would run
    only where the tree was built. The same launcher in another folder is judged as our
    own image (and fails our rules)."""
    minor = WINDOWS_MINORS[-1]
    _install(tmp_path, minor, _bundled_pip(minor))
    assert LAUNCHERS is not None
    t32 = tmp_path / LAUNCHERS.folder / "t32.exe"
    changed = bytearray(t32.read_bytes())
    changed[-10] ^= 0xFF
    t32.write_bytes(bytes(changed))
    pip = tmp_path / "Scripts/pip.exe"
    launcher = (tmp_path / LAUNCHERS.folder / LAUNCHERS.console).read_bytes()
    absolute = pip.read_bytes().replace(b"#!<launcher_dir>\\..\\python.exe", b"#!C:\\build\\python.exe", 1)
    pip.write_bytes(absolute)
    (tmp_path / "Scripts/t32.exe").write_bytes(t32.read_bytes())
    _, problems = check_pe_tree(tmp_path, WINDOWS)
    found, pinned = hashlib.sha256(changed).hexdigest()[:16], LAUNCHERS.sha256["t32.exe"][:16]
    assert problems[0] == (
        f"{LAUNCHERS.folder}/t32.exe: sha256 {found}… is not the pinned {pinned}… "
        f"(targets/{WINDOWS.triple}.yaml pe.launchers): ship pip's launcher unmodified"
    ), problems
    assert (
        "Scripts/pip.exe: the console script's shebang is '#!C:\\\\build\\\\python.exe', not "
        "'#!<launcher_dir>\\\\..\\\\python.exe': name the interpreter relative to the launcher, so the tree "
        "runs from any folder"
    ) in problems, problems
    assert "Scripts/t32.exe: machine I386, not AMD64 (x86_64-pc-windows-gnullvm)" in problems, problems
    assert pip.read_bytes().startswith(launcher)
