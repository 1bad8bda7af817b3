"""Our patches to CPython (cpython-patches/): each applies exactly to every pinned
version it names, the venv fix does what it says there, and the patches are inputs of
the build's cache key."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

from pyfreight.container.build_image import BuildImage
from pyfreight.container.build_job import job_key
from pyfreight.cpython import build
from pyfreight.cpython.build import CPYTHON_PATCHES_DIR, _cpython_job
from pyfreight.cpython.options import BuildOptions
from pyfreight.cpython.versions import load_versions
from pyfreight.errors import PyfreightError
from pyfreight.formats.tarball import open_tar
from pyfreight.paths import default_workspace
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import default_target

_, VERSIONS = load_versions()
PATCHES = sorted(CPYTHON_PATCHES_DIR.glob("*.patch"))
IMAGE = BuildImage(tag="pyfreight-build:test", image_id="sha256:" + "1" * 64, manifest=Path("/dev/null"))


def versions_of(patch: Path) -> list[str]:
    found = re.search(r"^Versions:(.*)$", patch.read_text(), re.MULTILINE)
    assert found, f"{patch.name}: no 'Versions:' line"
    return found[1].split()


def patched_files(patch: Path) -> list[str]:
    return re.findall(r"^\+\+\+ b/(\S+)", patch.read_text(), re.MULTILINE)


def needed(minor: str) -> list[str]:
    """The files of a pinned source the tests read: what its version's patches touch, and
    CPython's own getpath test (its mock file system)."""
    patched = (f for p in PATCHES if minor in versions_of(p) for f in patched_files(p))
    return sorted({"Modules/getpath.py", "Lib/test/test_getpath.py", *patched})


@pytest.fixture(scope="module")
def pristine(tmp_path_factory) -> dict[str, dict[str, bytes]]:
    """minor -> {path: bytes} of needed(minor) as they are in its tarball (one pass each)."""
    found: dict[str, dict[str, bytes]] = {}
    for minor, src in VERSIONS.items():
        tarball = fetch_source(src.source, default_workspace().downloads, log=lambda m: None)
        wanted = {f"{src.top_dir}/{name}": name for name in needed(minor)}
        found[minor] = {}
        with open_tar(tarball) as tar:
            for member in tar:
                fh = tar.extractfile(member) if member.name in wanted else None
                if fh is not None:
                    found[minor][wanted[member.name]] = fh.read()
        missing = set(needed(minor)) - set(found[minor])
        assert not missing, f"{src.source.file}: missing {missing}"
    return found


def extract(files: dict[str, bytes], dest: Path) -> Path:
    for name, data in files.items():
        path = dest / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return dest


def apply(patch: Path, tree: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["patch", "-p1", "--forward", "--fuzz=0", *extra, "-d", str(tree), "-i", str(patch)],
        capture_output=True,
        text=True,
    )


CASES = [(p, v) for p in PATCHES for v in versions_of(p)]


def test_every_patch_names_pinned_versions_and_says_why():
    assert PATCHES, f"no patches in {CPYTHON_PATCHES_DIR}"
    assert sorted(p.name for p in CPYTHON_PATCHES_DIR.iterdir()) == [p.name for p in PATCHES]
    for patch in PATCHES:
        versions = versions_of(patch)
        pinned = sorted(VERSIONS)
        assert versions and set(versions) <= set(pinned), f"{patch.name}: {versions}, pinned {pinned}"
        assert "\nWhy:" in patch.read_text().split("\n--- ")[0], f"{patch.name}: no 'Why:' in its header"
        assert patched_files(patch), f"{patch.name}: not a unified diff"


def _fix(minor: str, name: str) -> Path:
    """The patch of `minor` whose file name starts with `name` (one per version)."""
    fixes = [p for p, v in CASES if v == minor and p.name.startswith(name)]
    assert len(fixes) == 1, f"CPython {minor}: {name} patches {fixes}"
    return fixes[0]


@pytest.mark.parametrize("name", ["getpath-venv-home-symlink", "getpath-argv0-proc-self-exe"])
def test_every_pinned_version_gets_each_getpath_fix(name):
    for minor in VERSIONS:
        assert "Modules/getpath.py" in patched_files(_fix(minor, name))


@pytest.mark.parametrize("minor", sorted(VERSIONS))
def test_a_versions_patches_apply_together_in_name_order(minor, tmp_path, pristine):
    """As cpython/build.sh applies them: in name order, each exactly, onto the last."""
    tree = extract(pristine[minor], tmp_path)
    for patch in sorted((p for p, v in CASES if v == minor), key=lambda p: p.name):
        done = apply(patch, tree)
        assert done.returncode == 0, f"{patch.name}: " + done.stdout + done.stderr


@pytest.mark.parametrize(("patch", "minor"), CASES, ids=[f"{p.stem}@{v}" for p, v in CASES])
def test_patch_applies_exactly(patch, minor, tmp_path, pristine):
    tree = extract(pristine[minor], tmp_path)
    done = apply(patch, tree, "--dry-run")
    assert done.returncode == 0, done.stdout + done.stderr


def _cpython_test_getpath(test_getpath_py: Path) -> types.ModuleType:
    """CPython's own test_getpath.py, whose MockPosixNamespace mocks a POSIX file system."""
    support = types.ModuleType("test.support")
    support.verbose = False  # type: ignore[attr-defined]
    saved = {name: sys.modules.get(name) for name in ("test", "test.support")}
    sys.modules["test"], sys.modules["test.support"] = types.ModuleType("test"), support
    try:
        spec = importlib.util.spec_from_file_location("cpython_test_getpath", test_getpath_py)
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        for name, old in saved.items():
            if old is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = old
    return module


def _getpath_case(getpath_py: Path, test_getpath_py: Path) -> dict[str, object]:
    """Runs getpath.py, in CPython's own mock of a POSIX file system, for uv's layout:
    /home/u/.local/bin/python9.8 is a symlink into a tree at /opt/tree built with prefix
    /install, and /v a venv made through it."""
    module = _cpython_test_getpath(test_getpath_py)
    module.SOURCE = getpath_py.read_bytes()
    ns = module.MockPosixNamespace(argv0="/v/bin/python", PREFIX="/install")
    ns.add_known_xfile("/opt/tree/bin/python9.8")
    ns.add_known_file("/opt/tree/lib/python9.8/os.py")
    ns.add_known_dir("/opt/tree/lib/python9.8/lib-dynload")
    ns.add_known_xfile("/home/u/.local/bin/python9.8")
    ns.add_known_link("/home/u/.local/bin/python9.8", "/opt/tree/bin/python9.8")
    # Another Python's stdlib above `home` (with merged /usr, /lib is /usr/lib).
    ns.add_known_file("/lib/python9.8/os.py")
    ns.add_known_xfile("/v/bin/python")
    ns.add_known_link("/v/bin/python", "/home/u/.local/bin/python9.8")
    ns.add_known_file("/v/pyvenv.cfg", ["home = /home/u/.local/bin"])
    result: dict[str, object] = module.getpath(ns, ["base_prefix", "module_search_paths"])
    return result


@pytest.mark.parametrize("minor", sorted(VERSIONS))
def test_venv_through_an_outside_symlink_finds_the_tree(minor, tmp_path, pristine):
    patch = _fix(minor, "getpath-venv-home-symlink")
    names = ("Modules/getpath.py", "Lib/test/test_getpath.py")
    before = _getpath_case(*(extract(pristine[minor], tmp_path / "before") / n for n in names))
    assert before["base_prefix"] != "/opt/tree"  # the bug: /install or the other Python's /
    tree = extract(pristine[minor], tmp_path / "after")
    done = apply(patch, tree)
    assert done.returncode == 0, done.stdout + done.stderr
    after = _getpath_case(*(tree / n for n in names))
    assert after == {
        "base_prefix": "/opt/tree",
        "module_search_paths": [
            "/opt/tree/lib/python98.zip",
            "/opt/tree/lib/python9.8",
            "/opt/tree/lib/python9.8/lib-dynload",
        ],
    }


def _argv0_case(getpath_py: Path, test_getpath_py: Path, argv0: str, path: str) -> dict[str, object]:
    """getpath.py in the mock for a start whose argv[0] does not lead to the interpreter:
    the tree at /opt/tree (built with prefix /install) is what /proc/self/exe names, and
    Debian's /usr/bin/python3 is another Python on PATH."""
    module = _cpython_test_getpath(test_getpath_py)
    module.SOURCE = getpath_py.read_bytes()
    ns = module.MockPosixNamespace(argv0=argv0, PREFIX="/install", ENV_PATH=path)
    ns.add_known_xfile("/opt/tree/bin/python9.8")
    ns.add_known_file("/opt/tree/lib/python9.8/os.py")
    ns.add_known_dir("/opt/tree/lib/python9.8/lib-dynload")
    ns.add_known_link("/proc/self/exe", "/opt/tree/bin/python9.8")
    ns.add_known_xfile("/usr/bin/python3")
    ns.add_known_file("/usr/lib/python3.11/os.py")
    result: dict[str, object] = module.getpath(ns, ["base_prefix", "executable"])
    return result


@pytest.mark.parametrize(
    ("argv0", "path"), [("/dev/null", "/usr/bin"), ("python3", "/usr/bin"), ("py", "/no")]
)
@pytest.mark.parametrize("minor", sorted(VERSIONS))
def test_a_start_with_a_misleading_argv0_finds_the_tree(minor, argv0, path, tmp_path, pristine):
    names = ("Modules/getpath.py", "Lib/test/test_getpath.py")
    before = _argv0_case(*(extract(pristine[minor], tmp_path / "before") / n for n in names), argv0, path)
    assert before["base_prefix"] == "/install"  # the bug: the build-time prefix
    tree = extract(pristine[minor], tmp_path / "after")
    done = apply(_fix(minor, "getpath-argv0-proc-self-exe"), tree)
    assert done.returncode == 0, done.stdout + done.stderr
    after = _argv0_case(*(tree / n for n in names), argv0, path)
    assert after == {"base_prefix": "/opt/tree", "executable": "/opt/tree/bin/python9.8"}


def _job(
    minor: str, patches: Path | None = None, monkeypatch: pytest.MonkeyPatch | None = None, options="noopt"
):
    if patches is not None and monkeypatch is not None:
        monkeypatch.setattr(build, "CPYTHON_PATCHES_DIR", patches)
    return _cpython_job(
        VERSIONS[minor], BuildOptions.parse(options), default_target(), "# Setup\n", True, {}, None, None
    )


def options_of(patch: Path) -> set[str]:
    found = re.search(r"^Options:(.*)$", patch.read_text(), re.MULTILINE)
    return set(found[1].split()) if found else set()


def for_os(patch: Path, os_name: str) -> bool:
    found = re.search(r"^OS:(.*)$", patch.read_text(), re.MULTILINE)
    return found is None or os_name in found[1].split()


@pytest.mark.parametrize("options", ["noopt", "lto+static"])
def test_the_build_gets_only_its_versions_and_options_patches(options):
    modifiers = set(BuildOptions.parse(options).modifiers)
    for minor in VERSIONS:
        files = _job(minor, options=options).files
        staged = sorted(name.removeprefix("patches/") for name in files if name.startswith("patches/"))
        wanted = [p for p, v in CASES if v == minor and options_of(p) <= modifiers]
        assert staged == [p.name for p in wanted if for_os(p, default_target().os)]


def test_patches_are_in_the_cache_key(tmp_path, monkeypatch):
    patches = tmp_path / "cpython-patches"
    shutil.copytree(CPYTHON_PATCHES_DIR, patches)
    before = job_key(_job("3.14", patches, monkeypatch), IMAGE, default_target())
    patch = patches / _fix("3.14", "getpath-venv-home-symlink").name
    patch.write_text(patch.read_text().replace("Why:", "Why (reworded):", 1))
    assert job_key(_job("3.14", patches, monkeypatch), IMAGE, default_target()) != before
    # a patch for another version only does not change this version's key
    patch.write_text(patch.read_text().replace("Why (reworded):", "Why:", 1))
    (patches / "zz-other.patch").write_text("Versions: 3.13\nWhy: test\n--- a/x\n+++ b/x\n")
    assert job_key(_job("3.14", patches, monkeypatch), IMAGE, default_target()) == before


def test_a_patch_without_versions_is_an_error(tmp_path, monkeypatch):
    patches = tmp_path / "cpython-patches"
    patches.mkdir()
    (patches / "x.patch").write_text("--- a/x\n+++ b/x\n")
    with pytest.raises(PyfreightError, match="no 'Versions:' line"):
        _job("3.14", patches, monkeypatch)
