"""Path scrubbing of an installed tree (on a small fake tree with the real file kinds)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from pyfreight.cpython.relocate import find_build_paths, make_relocatable, scrub_flags
from pyfreight.errors import PyfreightError

CC = "clang-19 --target=x86_64-linux-gnu --sysroot=/sysroot"


def fake_tree(root):
    lib = root / "lib" / "python3.14"
    (lib / "config-3.14-x86_64-linux-gnu").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "lib" / "pkgconfig").mkdir()
    (lib / "_sysconfigdata__linux_x86_64-linux-gnu.py").write_text(
        "build_time_vars = {'CC': '" + CC + "',\n"
        " 'CFLAGS': '-O2 -ffile-prefix-map=/build/work=. -fstack-protector-strong',\n"
        " 'LDFLAGS': '-fuse-ld=lld -L/tools/deps/lib -Wl,-z,relro',\n"
        " 'INSTALL': '/usr/bin/install -c',\n"
        " 'prefix': '/install', 'LIBDIR': '/install/lib', 'VERSION': '3.14'}\n"
    )
    (lib / "config-3.14-x86_64-linux-gnu" / "Makefile").write_text(
        f"CC=\t\t{CC}\nprefix=\t\t/install\nLIBDIR=\t\t$(prefix)/lib\n"
    )
    (root / "lib" / "pkgconfig" / "python-3.14.pc").write_text(
        "prefix=/install\nexec_prefix=${prefix}\nLibs: -L${exec_prefix}/lib\n"
    )
    (root / "bin" / "pip3").write_text("#!/install/bin/python3.14\nimport sys\nprint(sys.argv)\n")
    (root / "bin" / "pip3").chmod(0o755)
    (root / "bin" / "python3.14").write_bytes(b"\x7fELF\0/install binary")
    return lib


def test_flags_become_host_flags():
    assert scrub_flags(f"'{CC} -O2 -fuse-ld=lld -L/tools/deps/lib -Wl,-z,now'") == "'cc -O2 -Wl,-z,now'"


def test_tree_is_scrubbed_and_sysconfig_follows_the_tree(tmp_path):
    root = tmp_path / "some where" / "py"
    lib = fake_tree(root)
    make_relocatable(root, "3.14.7")
    assert find_build_paths(root) == []
    path = lib / "_sysconfigdata__linux_x86_64-linux-gnu.py"
    spec = importlib.util.spec_from_file_location("scd", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    values = module.build_time_vars
    assert values["CC"] == "cc"
    assert values["prefix"] == sys.base_prefix  # computed at import, not /install
    assert values["LIBDIR"] == f"{sys.base_prefix}/lib"
    assert values["INSTALL"] == "/usr/bin/install -c"
    assert "/tools" not in values["LDFLAGS"] and "lld" not in values["LDFLAGS"]
    pc = (root / "lib/pkgconfig/python-3.14.pc").read_text()
    assert pc.startswith("prefix=${pcfiledir}/../..\n")


def test_makefile_prefix_is_computed_from_its_location(tmp_path):
    root = tmp_path / "tree"
    lib = fake_tree(root)
    make_relocatable(root, "3.14.7")
    makefile = lib / "config-3.14-x86_64-linux-gnu" / "Makefile"
    makefile.write_text(makefile.read_text() + "show:\n\t@echo $(LIBDIR)\n")
    out = subprocess.run(["make", "-s", "-f", str(makefile), "show"], capture_output=True, text=True)
    assert out.stdout.strip() == f"{root}/lib"


def test_script_shebang_finds_python_beside_it(tmp_path):
    root = tmp_path / "tree"
    fake_tree(root)
    (root / "bin" / "python3.14").unlink()
    (root / "bin" / "python3.14").symlink_to(sys.executable)
    make_relocatable(root, "3.14.7")
    link = tmp_path / "elsewhere"
    link.mkdir()
    (link / "pip").symlink_to(root / "bin" / "pip3")
    out = subprocess.run([str(link / "pip"), "arg"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert "'arg'" in out.stdout


def test_leftover_build_path_is_an_error(tmp_path):
    root = tmp_path / "tree"
    fake_tree(root)
    (root / "lib" / "python3.14" / "notes.txt").write_text("built in /build/work/Python-3.14.7\n")
    with pytest.raises(PyfreightError, match=r"notes\.txt: /build/work"):
        make_relocatable(root, "3.14.7")


def test_free_threaded_tree(tmp_path):
    root = tmp_path / "tree"
    lib = fake_tree(root)
    lib.rename(root / "lib" / "python3.14t")
    make_relocatable(root, "3.14.7")
    data = (root / "lib/python3.14t/_sysconfigdata__linux_x86_64-linux-gnu.py").read_text()
    assert "'CC': 'cc'" in data and "/tools" not in data
    assert "python3.14t" in (root / "bin" / "pip3").read_text().splitlines()[1]
