"""The runner's promises, checked with small synthetic recipes in real containers:
no network, not root, only declared inputs, and no artifact from a failed build."""

from __future__ import annotations

import hashlib
import io
import re
import tarfile

import pytest
import yaml

from pyfreight.container.images import ensure_images, ensure_unix_runtime
from pyfreight.container.run import RunSpec, run
from pyfreight.deps.scheduler import build_deps
from pyfreight.errors import PyfreightError
from pyfreight.paths import Workspace, default_workspace
from pyfreight.sources.recipes import load_all
from pyfreight.targets import default_target

pytestmark = pytest.mark.container


def make_recipe(root, name, build_sh, depends=()):
    """A recipe folder plus its source tarball (in root/mirror), pinned by hash."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for member, text in {"LICENSE": "demo license\n", "data.txt": f"{name}\n"}.items():
            info = tarfile.TarInfo(f"{name}-1.0/{member}")
            info.size, info.mtime = len(text), 1_600_000_000
            tar.addfile(info, io.BytesIO(text.encode()))
    data = buf.getvalue()
    (root / "mirror").mkdir(exist_ok=True)
    (root / "mirror" / f"{name}-1.0.tar").write_bytes(data)
    folder = root / "recipes" / name
    folder.mkdir(parents=True)
    (folder / "build.sh").write_text(build_sh)
    (folder / "recipe.yaml").write_text(
        yaml.safe_dump(
            {
                "name": name,
                "version": "1.0",
                "license": "MIT",
                "license_files": [f"{name}-1.0/LICENSE"],
                "depends": list(depends),
                "sources": [
                    {
                        "file": f"{name}-1.0.tar",
                        "sha256": hashlib.sha256(data).hexdigest(),
                        "size": len(data),
                        "urls": [],
                    }
                ],
            }
        )
    )


@pytest.fixture
def setup(tmp_path, monkeypatch):
    ensure_images(default_workspace(), default_target())
    monkeypatch.setenv("PYFREIGHT_MIRRORS", str(tmp_path / "mirror"))
    return tmp_path, Workspace(tmp_path / "build")


def build(tmp_path, ws, names):
    return build_deps(names, default_target(), ws, offline=True, recipes=load_all(tmp_path / "recipes"))


def test_isolation_and_artifact(setup):
    tmp_path, ws = setup
    make_recipe(
        tmp_path,
        "base",
        'tar xf "$SRC/base-1.0.tar"\nmkdir -p "$PREFIX/lib"\necho base > "$PREFIX/lib/base.txt"\n',
    )
    make_recipe(
        tmp_path,
        "probe",
        """
tar xf "$SRC/probe-1.0.tar"
test "$(id -u)" != 0                              # not root
test "$(ls /sys/class/net)" = lo                  # no network but loopback
test "$(ls "$SRC")" = probe-1.0.tar               # only the declared source
test "$(cat "$PREFIX/lib/base.txt")" = base       # dependency installed
! touch /inputs/sources/x 2>/dev/null             # inputs are read-only
mkdir -p "$PREFIX/lib" "$PREFIX/share/man/man1"
echo probe > "$PREFIX/lib/probe.txt"
echo page > "$PREFIX/share/man/man1/probe.1"
""",
        depends=["base"],
    )
    result = build(tmp_path, ws, ["probe"])
    assert sorted(result.built) == ["base", "probe"]
    with tarfile.open(result.artifacts["probe"].path) as tar:
        names = tar.getnames()
    # Only what probe added: not base's file, not the pruned man page; plus the license.
    assert names == [
        "lib",
        "lib/probe.txt",
        "share",
        "share/licenses",
        "share/licenses/probe",
        "share/licenses/probe/LICENSE",
    ]


def test_failed_build_leaves_nothing_and_shows_log(setup):
    tmp_path, ws = setup
    make_recipe(tmp_path, "broken", 'echo "about to fail: marker-42"\nexit 3\n')
    with pytest.raises(PyfreightError) as err:
        build(tmp_path, ws, ["broken"])
    message = str(err.value)
    assert "marker-42" in message and "broken-1.0-x86_64-unknown-linux-gnu.log" in message
    assert not list(ws.artifacts.glob("broken-*.tar")) and not list(ws.artifacts.glob("broken-*.json"))
    assert not list(ws.scratch.iterdir())  # staging removed


@pytest.mark.parametrize(
    ("name", "install", "message"),
    [
        # everything here is static
        ("shared", 'touch "$PREFIX/lib/libx.so.1"', "shared library lib/libx.so.1"),
        # no build path may reach an artifact
        ("leaky", 'pwd > "$PREFIX/lib/where.txt"', "lib/where.txt contains /build/work"),
        # license_files must exist (this one never unpacks its source)
        ("nolicense", "rm -rf nolicense-1.0", "license file 'nolicense-1.0/LICENSE'"),
    ],
)
def test_bad_output_is_refused(setup, name, install, message):
    tmp_path, ws = setup
    make_recipe(
        tmp_path,
        name,
        f'tar xf "$SRC/{name}-1.0.tar"\nmkdir -p "$PREFIX/lib"\n{install}\ntouch "$PREFIX/lib/ok"\n',
    )
    with pytest.raises(PyfreightError, match=re.escape(message)):
        build(tmp_path, ws, [name])
    assert not list(ws.artifacts.glob(f"{name}-*.tar"))


def test_captured_output_that_is_not_utf8_is_kept_not_fatal():
    """A program in a container may print any bytes (CPython's tests under Wine print
    the console's code page); the runner keeps them, undecodable bytes replaced, instead
    of failing on them."""
    image = ensure_unix_runtime(default_workspace(), default_target())
    result = run(RunSpec(image=image, command=["printf", "ok \\346\\n"], what="printing a stray byte"))
    assert result.ok and result.stdout == "ok \ufffd\n"
