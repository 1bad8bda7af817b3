"""Path scrubbing of an installed tree (on a small fake tree with the real file kinds)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from pyfreight.cpython.relocate import (
    CONFIG_SH_INSTALLED_PREFIX,
    find_build_paths,
    make_relocatable,
    scrub_flags,
)
from pyfreight.errors import PyfreightError
from pyfreight.targets import all_targets, default_target
from pyfreight.toolchain import compiler_commands

CC = compiler_commands(default_target())[0]  # what the build's sysconfig says


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
    # What make install leaves with the build prefix in it, as CPython writes them.
    python_config = lib / "config-3.14-x86_64-linux-gnu" / "python-config.py"
    python_config.write_text("#!/install/bin/python3.14\n# -*- python -*-\nimport sys\nprint(sys.argv[1:])\n")
    python_config.chmod(0o755)
    (root / "bin" / "python3.14-config").write_text(
        "#!/bin/sh\n\n"
        + CONFIG_SH_INSTALLED_PREFIX
        + '\nprefix_real=$(installed_prefix "$0")\nprefix="/install"\nexec_prefix="${prefix}"\n'
        + 'includedir=$(echo "${prefix}/include" | sed "s#$prefix#$prefix_real#")\n'
        + 'echo "$prefix_real|$includedir"\n'
    )
    (root / "bin" / "python3.14-config").chmod(0o755)
    (root / "bin" / "python3-config").symlink_to("python3.14-config")
    (lib / "_sysconfig_vars__linux_x86_64-linux-gnu.json").write_text(
        json.dumps({"prefix": "/install", "LIBDIR": "/install/lib", "INSTALL": "/usr/bin/install -c"})
    )
    (lib / "build-details.json").write_text(
        json.dumps(
            {
                "schema_version": "1.0",
                "base_prefix": "/install",
                "base_interpreter": "/install/bin/python3.14",
                "libpython": {"static": "/install/lib/libpython3.14.a"},
                "c_api": {
                    "headers": "/install/include/python3.14",
                    "pkgconfig_path": "/install/lib/pkgconfig",
                },
            },
            indent=2,
        )
    )
    return lib


def test_flags_become_host_flags():
    assert scrub_flags(f"'{CC} -O2 -fuse-ld=lld -L/tools/deps/lib -Wl,-z,now'") == "'cc -O2 -Wl,-z,now'"


def test_tree_is_scrubbed_and_sysconfig_follows_the_tree(tmp_path):
    root = tmp_path / "some where" / "py"
    lib = fake_tree(root)
    rewritten = make_relocatable(root, "3.14.7")
    assert find_build_paths(root) == []
    # The modules whose bytecode must be compiled again, because their text changed.
    assert rewritten == [lib / "_sysconfigdata__linux_x86_64-linux-gnu.py"]
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


def test_the_interpreter_make_install_hard_links_is_one_file(tmp_path):
    """A free-threaded `make install` leaves bin/python3.14 a hard link of python3.14t;
    archives would carry it twice, and bin/python3 (-> python3.14) would resolve to
    another path than bin/python (-> python3.14t), which validate refuses."""
    root = tmp_path / "tree"
    lib = fake_tree(root)
    lib.rename(root / "lib" / "python3.14t")
    bin_dir = root / "bin"
    (bin_dir / "python3.14").rename(bin_dir / "python3.14t")
    (bin_dir / "python3.14").hardlink_to(bin_dir / "python3.14t")
    (bin_dir / "python3").symlink_to("python3.14")
    make_relocatable(root, "3.14.7")
    assert (bin_dir / "python3.14").readlink().name == "python3.14t"
    assert (bin_dir / "python3.14t").stat().st_nlink == 1
    assert (bin_dir / "python").resolve() == (bin_dir / "python3").resolve() == bin_dir / "python3.14t"


def test_build_paths_found_in_any_text_file_shebangs_included(tmp_path):
    # The install prefix is a build path too: python-config.py kept #!/install/bin/…
    # because the scan only knew /tools/deps, /build/work and /sysroot.
    root = tmp_path / "tree"
    (root / "lib" / "python3.14" / "config-3.14").mkdir(parents=True)
    (root / "lib" / "python3.14" / "config-3.14" / "python-config.py").write_text(
        "#!/install/bin/python3.14\nimport sys\n"
    )
    (root / "lib" / "python3.14" / "vars.json").write_text('{"LIBPL": "-L/install/lib"}\n')
    (root / "lib" / "python3.14" / "flags.txt").write_text("cc -I/install/include/python3.14\n")
    # /install inside another path or name is not the prefix.
    (root / "lib" / "python3.14" / "fine.py").write_text(
        "INSTALL = '/usr/bin/install -c'\nfrom pip._internal.commands import install\n"
        "p = 'commands/install.py'; s = 'config/install-sh'; t = '/installer/x'\n"
    )
    found = sorted(leak.split(":")[0] for leak in find_build_paths(root))
    assert found == [
        "lib/python3.14/config-3.14/python-config.py",
        "lib/python3.14/flags.txt",
        "lib/python3.14/vars.json",
    ]


def test_python_config_py_finds_the_interpreter_three_folders_up(tmp_path):
    root = tmp_path / "some where" / "tree"
    lib = fake_tree(root)
    (root / "bin" / "python3.14").unlink()
    (root / "bin" / "python3.14").symlink_to(sys.executable)
    make_relocatable(root, "3.14.7")
    script = lib / "config-3.14-x86_64-linux-gnu" / "python-config.py"
    assert "/install" not in script.read_text()
    moved = tmp_path / "moved tree"
    (tmp_path / "some where" / "tree").rename(moved)
    out = subprocess.run([str(moved / script.relative_to(root)), "--cflags"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['--cflags']"


def test_config_script_finds_its_prefix_from_a_path_with_a_space(tmp_path):
    root = tmp_path / "some where" / "tree"
    fake_tree(root)
    make_relocatable(root, "3.14.7")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "pyconf").symlink_to(root / "bin" / "python3-config")
    for script in (root / "bin" / "python3-config", elsewhere / "pyconf"):
        out = subprocess.run(["sh", str(script)], capture_output=True, text=True)
        assert out.returncode == 0 and not out.stderr, out.stderr
        assert out.stdout.strip() == f"{root}|{root}/include"


def test_json_files_keep_no_build_prefix(tmp_path):
    root = tmp_path / "tree"
    lib = fake_tree(root)
    make_relocatable(root, "3.14.7")
    details = json.loads((lib / "build-details.json").read_text())
    # PEP 739's relative form: base_prefix from the file's folder, the rest from base_prefix.
    assert details["base_prefix"] == "../.."
    assert details["base_interpreter"] == "./bin/python3.14"
    assert details["libpython"]["static"] == "./lib/libpython3.14.a"
    assert details["c_api"] == {"headers": "./include/python3.14", "pkgconfig_path": "./lib/pkgconfig"}
    assert (lib / details["base_prefix"] / details["base_interpreter"]).resolve() == root / "bin/python3.14"
    variables = json.loads((lib / "_sysconfig_vars__linux_x86_64-linux-gnu.json").read_text())
    assert variables == {
        "prefix": "@PYFREIGHT_PREFIX@",
        "LIBDIR": "@PYFREIGHT_PREFIX@/lib",
        "INSTALL": "/usr/bin/install -c",
    }


@pytest.mark.parametrize("triple", sorted(all_targets()))
def test_every_targets_compilers_become_cc_and_cxx(triple):
    cc, cxx = compiler_commands(all_targets()[triple])
    assert scrub_flags(f"{cc} -O2") == "cc -O2"
    assert scrub_flags(f"{cxx} -c") == "c++ -c"
