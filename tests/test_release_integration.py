"""`pyfreight release` on the real 3.14 noopt archives, and uv (pinned in the test extra,
from PyPI) installing our Python from the generated downloads index with file:// URLs
and no network at all (UV_OFFLINE), then making a venv, installing a wheel into it and
running a script with `uv run`."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from pyfreight.container.images import base_tag, ensure_images, load_spec
from pyfreight.paths import default_workspace
from pyfreight.targets import default_target
from tests.conftest import REPO, pyfreight_cli
from tests.tiers import CLIENTS

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


def _wheel(folder: Path, name: str, modules: dict[str, str]) -> Path:
    """A pure-Python wheel NAME 1.0 of `modules`, made by hand."""
    path = folder / f"{name}-1.0-py3-none-any.whl"
    info = f"{name}-1.0.dist-info"
    files = {
        **modules,
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for member, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{member},sha256={digest},{len(text.encode())}")
    files[f"{info}/RECORD"] = "\n".join([*record, f"{info}/RECORD,,"]) + "\n"
    with zipfile.ZipFile(path, "w") as archive:
        for member, text in files.items():
            archive.writestr(member, text)
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
    uv(
        "pip",
        "install",
        "--python",
        tmp_path / "venv" / "bin" / "python",
        _wheel(tmp_path, "greeting", {"greeting.py": "def hello():\n    return 'hello from a wheel'\n"}),
    )
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


USING = REPO / "docs" / "using.md"


def _documented(language: str, holding: str) -> str:
    """The fenced `language` block of docs/using.md that holds `holding`."""
    blocks = re.findall(rf"^```{language}\n(.*?)^```", USING.read_text(), re.M | re.S)
    found = [block for block in blocks if holding in block]
    assert len(found) == 1, f"docs/using.md: expected one {language} block with {holding!r}"
    return found[0]


@pytest.fixture(scope="module")
def base_image() -> str:
    """Our Debian base image (glibc, no Python), standing in for debian:trixie-slim,
    which no registry serves here."""
    ensure_images(default_workspace(), default_target())
    return base_tag(load_spec())


@pytest.mark.parametrize("holding", ["ADD ${ARCHIVE}", "sha256sum --ignore-missing"], ids=["add", "verified"])
def test_the_documented_dockerfiles_build_offline_and_run(noopt_dist, release, base_image, tmp_path, holding):
    context = tmp_path / "context"
    context.mkdir()
    archive = noopt_dist.install_only_stripped.name
    for name in (archive, "SHA256SUMS"):
        os.link(release / name, context / name)
    (context / "Dockerfile").write_text(_documented("dockerfile", holding))
    tag = f"pyfreight-docs-test:{tmp_path.name.lower()}"
    build_args = ["--build-arg", f"BASE={base_image}", "--build-arg", f"ARCHIVE={archive}"]
    try:
        built = subprocess.run(
            ["docker", "build", "--network", "none", "-q", "-t", tag, *build_args, str(context)],
            capture_output=True,
            text=True,
        )
        assert built.returncode == 0, built.stderr[-3000:]
        probe = "import ssl, sys; print(sys.prefix, sys.version_info[:2], ssl.OPENSSL_VERSION)"
        ran = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", tag, "python3", "-c", probe],
            capture_output=True,
            text=True,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.startswith("/opt/python (3, 14) OpenSSL 3"), ran.stdout
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True)


CARGO = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")


@pytest.mark.part(CLIENTS)
def test_the_documented_pyapp_build_runs_our_python_offline(noopt_dist, tmp_path):
    """docs/using.md's pyapp commands as written (cargo fetches pyapp from its registry), with our
    archive and an application wheel embedded; the result runs with no network."""
    # Not skipped when cargo is missing: the tier claims this test, so it says what is missing.
    assert Path(CARGO).is_file(), "pyapp builds with cargo, which this machine lacks: install Rust (rustup)"
    commands = _documented("sh", "PYAPP_DISTRIBUTION_PATH")
    archive = re.search(r"cpython-\S*-install_only_stripped\.tar\.gz", commands)
    assert archive
    shutil.copy(noopt_dist.install_only_stripped, tmp_path / archive.group(0))
    cli = "import sys\n\ndef main():\n    print('myapp on', sys.version.split()[0], sys.argv[1:])\n"
    _wheel(tmp_path, "myapp", {"myapp/__init__.py": "", "myapp/cli.py": cli})
    env = {"PATH": f"{Path(CARGO).parent}:/usr/bin:/bin", "HOME": os.environ.get("HOME", str(tmp_path))}
    built = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert built.returncode == 0, built.stderr[-3000:]
    run_env = {
        "PATH": "/usr/bin:/bin",
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    ran = subprocess.run(
        ["unshare", "--net", str(tmp_path / "myapp"), "a", "b"], capture_output=True, text=True, env=run_env
    )
    version = noopt_dist.python_json["python_version"]
    assert ran.returncode == 0 and f"myapp on {version} ['a', 'b']" in ran.stdout, ran.stdout + ran.stderr
