"""`pyfreight release` on the real 3.14 noopt archives, and uv (pinned in the test extra,
from PyPI) installing our Python from the generated downloads index with file:// URLs
and no network at all (UV_OFFLINE), then making a venv, installing a wheel into it and
running a script with `uv run`."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO, pyfreight_cli

pytestmark = pytest.mark.container

UV = REPO / ".venv" / "bin" / "uv"


@pytest.fixture(scope="module")
def release(noopt_dist, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("release") / "r"
    made = pyfreight_cli("release", noopt_dist.full, "--base-url", f"file://{out}", "-o", out)
    assert made.returncode == 0, made.stderr[-3000:]
    return out


def test_the_release_folder_says_what_it_holds(noopt_dist, release, tmp_path):
    names = sorted(p.name for p in noopt_dist.archives)
    assert sorted(p.name for p in release.iterdir()) == sorted(
        [*names, "SHA256SUMS", "downloads.json", "release.json", "RELEASE_NOTES.md"]
    )
    sums = dict(reversed(line.split("  ")) for line in (release / "SHA256SUMS").read_text().splitlines())
    for name in names:
        assert sums[name] == hashlib.sha256((release / name).read_bytes()).hexdigest()
    summary = json.loads((release / "release.json").read_text())
    assert summary["tag"] == noopt_dist.full.name.split("+")[1].split("-")[0]
    assert {a["flavour"] for a in summary["archives"]} == {"full", "install_only", "install_only_stripped"}
    assert all(
        a["options"] == "noopt" and a["target"] == "x86_64-unknown-linux-gnu" for a in summary["archives"]
    )
    notes = (release / "RELEASE_NOTES.md").read_text()
    assert "| openssl | 3." in notes and "glibc-max-symbol-version:2.28" in notes

    # The same archives give the same bytes.
    again = tmp_path / "again"
    made = pyfreight_cli("release", noopt_dist.full, "--base-url", f"file://{release}", "-o", again)
    assert made.returncode == 0, made.stderr[-2000:]
    for name in ("SHA256SUMS", "downloads.json", "release.json", "RELEASE_NOTES.md"):
        assert (again / name).read_bytes() == (release / name).read_bytes(), name


def _wheel(folder: Path) -> Path:
    """A pure-Python wheel, made by hand: greeting 1.0 with one module."""
    path = folder / "greeting-1.0-py3-none-any.whl"
    files = {
        "greeting.py": "def hello():\n    return 'hello from a wheel'\n",
        "greeting-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: greeting\nVersion: 1.0\n",
        "greeting-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [f"{name},sha256=,{len(text)}" for name, text in files.items()]
    files["greeting-1.0.dist-info/RECORD"] = "\n".join([*record, "greeting-1.0.dist-info/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return path


def test_uv_installs_our_python_offline_and_uses_it(noopt_dist, release, tmp_path):
    assert UV.is_file(), "uv is in the test extra of pyproject.toml"
    version = noopt_dist.python_json["python_version"]
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "UV_NO_CONFIG": "1",
        "UV_OFFLINE": "1",  # no network: the index and the archive come from file:// URLs
        "UV_CACHE_DIR": str(tmp_path / "cache"),
        "UV_PYTHON_INSTALL_DIR": str(tmp_path / "pythons"),
        "UV_PYTHON_BIN_DIR": str(tmp_path / "bin"),
        "UV_PYTHON_DOWNLOADS_JSON_URL": f"file://{release}/downloads.json",
        "UV_PYTHON_PREFERENCE": "only-managed",
    }

    def uv(*args: str | Path) -> str:
        proc = subprocess.run(
            [str(UV), *map(str, args)], capture_output=True, text=True, env=env, cwd=tmp_path
        )
        assert proc.returncode == 0, f"uv {args}: {proc.stdout}{proc.stderr}"
        return proc.stdout + proc.stderr

    # uv skips entries it cannot parse without a word: the version must be listed.
    listed = uv("python", "list", "--only-downloads", "--all-versions")
    assert f"cpython-{version}-linux-x86_64-gnu" in listed, listed
    uv("python", "install", version)
    installed = tmp_path / "pythons"
    assert any(installed.glob(f"cpython-{version}*/bin/python3")), sorted(p.name for p in installed.iterdir())

    uv("venv", "--python", version, tmp_path / "venv")
    uv("pip", "install", "--python", tmp_path / "venv" / "bin" / "python", _wheel(tmp_path))
    run = subprocess.run(
        [
            str(tmp_path / "venv" / "bin" / "python"),
            "-c",
            "import greeting, sys; print(greeting.hello(), sys.base_prefix)",
        ],
        capture_output=True,
        text=True,
        env=env,
    )
    assert run.stdout.startswith("hello from a wheel " + str(installed)), run.stdout + run.stderr

    script = tmp_path / "script.py"
    script.write_text(
        "import sqlite3, ssl, sys\nprint(sys.version_info[:3], sqlite3.sqlite_version, ssl.OPENSSL_VERSION)\n"
    )
    out = uv("run", "--python", version, "--no-project", script)
    assert f"({version.replace('.', ', ')})" in out and "OpenSSL 3" in out, out


def test_an_archive_that_fails_validation_is_not_released(noopt_dist, tmp_path):
    dist = tmp_path / "dist"
    dist.mkdir()
    for path in noopt_dist.archives:
        shutil.copy(path, dist / path.name)
    stripped = dist / noopt_dist.install_only_stripped.name
    stripped.write_bytes(b"not an archive")
    out = tmp_path / "r"
    made = pyfreight_cli("release", dist / noopt_dist.full.name, "--base-url", "file:///srv", "-o", out)
    assert made.returncode != 0 and "failed validation, nothing released" in made.stderr, made.stderr[-2000:]
    assert stripped.name in made.stderr and "Traceback" not in made.stderr
    assert not out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".r.")]
    os.remove(stripped)
    missing = pyfreight_cli("release", dist / noopt_dist.full.name, "--base-url", "file:///srv", "-o", out)
    assert missing.returncode != 0 and f"{stripped.name} is missing beside" in missing.stderr
