"""libpython3.X.so of a real noopt build, used as programs that embed Python use it,
from the install_only archive unpacked at a path with a space: a C program built by the
host's gcc with the flags pkg-config's python3-embed gives (and python3-config --embed,
at a path without one: it cannot quote), PyInstaller from PyPI (test-all's clients
part), PyO3 with auto-initialize built by cargo (the same part), and an SQLite
extension compiled here, loaded through sqlite3's enable_load_extension."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tarfile
import textwrap
from pathlib import Path

import pytest
from elftools.elf.dynamic import DynamicSection
from elftools.elf.elffile import ELFFile

from pyfreight.container.images import base_tag, ensure_images, load_spec
from pyfreight.formats.tarball import extract
from pyfreight.paths import default_workspace
from pyfreight.targets import default_target
from tests.conftest import REPO
from tests.tiers import CLIENTS

# Reads the noopt build's archives only: beside the engine group (conftest.py)
pytestmark = [pytest.mark.container, pytest.mark.archive_reader]

EMBEDDING_PROGRAM = r"""
#include <Python.h>

int main(void) {
    Py_Initialize();
    int failed = PyRun_SimpleString(
        "import ssl, sqlite3, sys\n"
        "print(ssl.OPENSSL_VERSION)\n"
        "print('sqlite', sqlite3.sqlite_version)\n"
        "print('prefix', sys.prefix)\n");
    if (Py_FinalizeEx() < 0) return 120;
    return failed ? 1 : 0;
}
"""

# A function half(x) registered by the extension's entry point, which SQLite derives
# from the file name (sqlite3_half_init for half.so).
SQLITE_EXTENSION = r"""
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

static void half(sqlite3_context *context, int argc, sqlite3_value **argv) {
    (void)argc;
    sqlite3_result_double(context, sqlite3_value_double(argv[0]) / 2.0);
}

int sqlite3_half_init(sqlite3 *db, char **error, const sqlite3_api_routines *api) {
    (void)error;
    SQLITE_EXTENSION_INIT2(api);
    return sqlite3_create_function(db, "half", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, 0, half, 0, 0);
}
"""


@pytest.fixture(scope="module")
def tree(noopt_dist, tmp_path_factory) -> Path:
    """The install_only archive unpacked where a path has a space."""
    folder = tmp_path_factory.mktemp("embedding") / "with space"
    extract(noopt_dist.install_only, folder)
    return folder / "python"


def _needed(program: Path) -> list[str]:
    with program.open("rb") as fh:
        dynamic = next(s for s in ELFFile(fh).iter_sections() if isinstance(s, DynamicSection))
        return [t.needed for t in dynamic.iter_tags() if t.entry.d_tag == "DT_NEEDED"]


def _flags(command: list[str], **kwargs) -> list[str]:
    out = subprocess.run(command, check=True, capture_output=True, text=True, timeout=60, **kwargs)
    return shlex.split(out.stdout)


def _build_and_run(tree: Path, folder: Path, flags: list[str]) -> subprocess.CompletedProcess[str]:
    (folder / "embed.c").write_text(EMBEDDING_PROGRAM)
    program = folder / "embed"
    # The rpath to the tree's lib/ is the program's choice, as for any shared library
    # installed outside the system's folders.
    compile_ = ["gcc", str(folder / "embed.c"), "-o", str(program), *flags, f"-Wl,-rpath,{tree}/lib"]
    subprocess.run(compile_, check=True, capture_output=True, text=True, timeout=300)
    assert "libpython3.14.so.1.0" in _needed(program), _needed(program)
    # Where the tree is, as docs/using.md says: CPython looks for its stdlib from the
    # program's location, never from libpython's.
    env = {"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8", "PYTHONHOME": str(tree)}
    return subprocess.run([str(program)], capture_output=True, text=True, timeout=120, env=env, cwd=folder)


def test_a_c_program_built_with_python3_config_embed_runs(noopt_dist, tmp_path):
    # At a path without a space: python3-config prints paths unquoted (CPython's script).
    extract(noopt_dist.install_only, tmp_path / "plain")
    tree = tmp_path / "plain" / "python"
    config = str(tree / "bin" / "python3-config")
    flags = _flags([config, "--cflags"]) + _flags([config, "--embed", "--ldflags"])
    assert f"-L{tree}/lib" in flags and "-lpython3.14" in flags, flags
    ran = _build_and_run(tree, tmp_path, flags)
    assert ran.returncode == 0, ran.stderr[-3000:]
    lines = ran.stdout.splitlines()
    assert lines[0].startswith("OpenSSL 3.") and lines[1].startswith("sqlite 3.")
    assert lines[2] == f"prefix {tree}", lines


def test_pkg_config_python3_embed_names_the_library(tree, tmp_path):
    env = {**os.environ, "PKG_CONFIG_PATH": str(tree / "lib" / "pkgconfig")}
    flags = _flags(["pkg-config", "--cflags", "--libs", "python3-embed"], env=env)
    assert "-lpython3.14" in flags, flags
    ran = _build_and_run(tree, tmp_path, flags)
    assert ran.returncode == 0, ran.stderr[-3000:]


def test_sysconfig_describes_the_shared_library(tree):
    probe = (
        "import sysconfig as s; "
        "print(*(s.get_config_var(k) for k in ('Py_ENABLE_SHARED', 'LDLIBRARY', 'INSTSONAME', 'LIBDIR')))"
    )
    out = subprocess.run(
        [str(tree / "bin" / "python3"), "-c", probe], check=True, capture_output=True, text=True
    )
    enabled, ldlibrary, soname, libdir = out.stdout.split(" ", 3)
    assert (enabled, ldlibrary, soname) == ("1", "libpython3.14.so", "libpython3.14.so.1.0")
    assert Path(libdir.strip()) == tree / "lib"
    assert (tree / "lib" / ldlibrary).resolve() == tree / "lib" / soname


def _sqlite_header_folder(tmp_path: Path) -> Path:
    """sqlite3ext.h of the SQLite the build bundles, from its dependency artifact."""
    target = default_target()
    [artifact] = default_workspace().build.glob(f"sqlite-*-{target.triple}.tar")
    with tarfile.open(artifact) as tar:
        tar.extractall(
            tmp_path / "sqlite",
            members=[tar.getmember(f"include/{n}") for n in ("sqlite3.h", "sqlite3ext.h")],
            filter="data",
        )
    return tmp_path / "sqlite" / "include"


def test_an_sqlite_extension_loads_once_enabled(tree, tmp_path):
    (tmp_path / "half.c").write_text(SQLITE_EXTENSION)
    include = _sqlite_header_folder(tmp_path)
    compile_ = [
        "gcc",
        "-shared",
        "-fPIC",
        f"-I{include}",
        str(tmp_path / "half.c"),
        "-o",
        str(tmp_path / "half.so"),
    ]
    subprocess.run(compile_, check=True, capture_output=True, text=True, timeout=300)
    script = (
        "import sqlite3, sys\n"
        "db = sqlite3.connect(':memory:')\n"
        "try:\n"
        "    db.load_extension(sys.argv[1])\n"
        "except sqlite3.OperationalError as e:\n"
        "    print('refused:', e)\n"
        "db.enable_load_extension(True)\n"
        "db.load_extension(sys.argv[1])\n"
        "db.enable_load_extension(False)\n"
        "print(db.execute('select half(5)').fetchone()[0])\n"
    )
    ran = subprocess.run(
        [str(tree / "bin" / "python3"), "-I", "-c", script, str(tmp_path / "half")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.splitlines() == ["refused: not authorized", "2.5"], ran.stdout


def _documented_block(holding: str) -> str:
    """The sh block of docs/using.md holding `holding`: the commands users copy."""
    text = (REPO / "docs" / "using.md").read_text()
    blocks = re.findall(r"^( *)```sh\n(.*?)^\1```", text, re.M | re.S)
    [found] = [textwrap.dedent(indent + block) for indent, block in blocks if holding in block]
    return found


@pytest.mark.part(CLIENTS)
def test_the_documented_pyinstaller_onefile_runs_alone_in_a_container(tree, tmp_path):
    """docs/using.md's PyInstaller commands as written (pip fetches it from the index
    this machine's pip is configured with), in the folder holding the tree; the program
    then runs in our Debian base image, which has no Python, with no network."""
    folder = tree.parent
    (folder / "hello.py").write_text(
        "import ssl, sqlite3, sys\nprint('hello from', sys.version.split()[0], ssl.OPENSSL_VERSION)\n"
    )
    commands = _documented_block("pyinstaller --onefile")
    # The last line runs the program here; the container runs it below.
    built = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", commands], cwd=folder, capture_output=True, text=True, timeout=1800
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    assert built.stdout.splitlines()[-1].startswith("hello from 3.14"), built.stdout[-2000:]
    ensure_images(default_workspace(), default_target())
    ran = subprocess.run(
        [
            "docker",
            "run",
            "--rm",
            "--network",
            "none",
            "-v",
            f"{folder / 'dist'}:/app:ro",
            base_tag(load_spec()),
            "/app/hello",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stderr[-3000:]
    assert ran.stdout.startswith("hello from 3.14") and "OpenSSL 3." in ran.stdout, ran.stdout


CARGO = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
PYO3_PROGRAM = """use pyo3::prelude::*;

fn main() -> PyResult<()> {
    Python::attach(|py| {
        let version: String = py.import("sys")?.getattr("version")?.extract()?;
        let openssl: String = py.import("ssl")?.getattr("OPENSSL_VERSION")?.extract()?;
        let sqlite: String = py.import("sqlite3")?.getattr("sqlite_version")?.extract()?;
        println!("{} | {} | sqlite {}", version.split_whitespace().next().unwrap(), openssl, sqlite);
        Ok(())
    })
}
"""


@pytest.mark.part(CLIENTS)
def test_the_documented_pyo3_program_embeds_our_python(tree, tmp_path):
    """docs/using.md's PyO3 commands as written, on a crate whose only dependency is
    pyo3 with auto-initialize (cargo fetches it from its registry)."""
    # Not skipped when cargo is missing: the tier claims this test, so it says what is missing.
    assert Path(CARGO).is_file(), "PyO3 builds with cargo, which this machine lacks: install Rust (rustup)"
    crate = tree.parent
    (crate / "src").mkdir(exist_ok=True)
    (crate / "src" / "main.rs").write_text(PYO3_PROGRAM)
    (crate / "Cargo.toml").write_text(
        '[package]\nname = "embedded"\nversion = "0.1.0"\nedition = "2021"\n\n'
        '[dependencies]\npyo3 = { version = "0.27", features = ["auto-initialize"] }\n'
    )
    env = {
        "PATH": f"{Path(CARGO).parent}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", str(tmp_path)),
        "CARGO_TARGET_DIR": str(crate / "target"),
    }
    ran = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", _documented_block("PYO3_PYTHON")],
        cwd=crate, env=env, capture_output=True, text=True, timeout=1800,
    )  # fmt: skip
    assert ran.returncode == 0, ran.stderr[-3000:]
    version = subprocess.run(
        [str(tree / "bin" / "python3"), "-c", "import sys; print(sys.version.split()[0])"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert ran.stdout.startswith(f"{version} | OpenSSL 3.") and "| sqlite 3." in ran.stdout, ran.stdout
    assert "libpython3.14.so.1.0" in _needed(crate / "target" / "debug" / "embedded")
