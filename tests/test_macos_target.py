"""The macOS targets as data and what the build derives from them, without a build:
the modules built for macOS (cpython/extensions.yaml `for_os`), the recipes left out,
how a framework travels from a Setup line to PYTHON.json, CPython's link variables for
zig's Mach-O linker, and our own declarations of the Apple interfaces zig lacks
(macos/), compiled and linked here by the pinned zig against our framework stubs."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pyfreight.archives.describe import link_entry, object_file_format
from pyfreight.cpython.buildinfo import setup_rules
from pyfreight.cpython.options import BuildOptions, compiler_env, configure_args
from pyfreight.cpython.setup_local import (
    SetupModule,
    load_extension_data,
    render_setup_local,
    required_recipes,
)
from pyfreight.cpython.versions import cpython_source
from pyfreight.deps.graph import for_os
from pyfreight.embed.zig import pinned_zig
from pyfreight.errors import PyfreightError
from pyfreight.formats.macho import macho_facts
from pyfreight.formats.macho_symbols import hide_in_library
from pyfreight.paths import REPO_ROOT, default_workspace
from pyfreight.runners import runner_for
from pyfreight.sources.recipes import load_all
from pyfreight.targets import all_targets
from pyfreight.toolchain import LLVM
from pyfreight.verify.macho_rules import macho_problems

ARM = all_targets()["aarch64-apple-darwin"]
INTEL = all_targets()["x86_64-apple-darwin"]
MODULES = [
    SetupModule("_scproxy", ("_scproxy.c",)),
    SetupModule("_uuid", ("_uuidmodule.c",)),
    SetupModule("_tkinter", ("_tkinter.c", "tkappinit.c")),
    SetupModule("_bz2", ("_bz2module.c",)),
]


def test_each_macos_target_names_its_cpu_minimum_and_signature_rule():
    assert (ARM.binary_format, ARM.macho.cpu, ARM.macho.minimum_os, ARM.macho.code_signature_required) == (
        "macho",
        "ARM64",
        (11, 0),
        True,
    )
    assert (INTEL.macho.cpu, INTEL.macho.minimum_os, INTEL.macho.code_signature_required) == (
        "X86_64",
        (10, 15),
        False,
    )
    for found in (ARM, INTEL):
        # zig writes the minimum macOS from its target triple alone
        assert found.toolchain.clang_triple.endswith(f"-macos.{found.macho.minimum_os_text}")
        assert found.python_platform_tag.startswith(f"macosx-{found.macho.minimum_os_text}-")
        assert runner_for(found).kind == "unavailable" and not found.native
        assert found.frameworks == {"CoreFoundation", "SystemConfiguration"}
    assert (ARM.uname_machine, INTEL.uname_machine) == ("arm64", "x86_64")


def test_running_a_macos_program_here_is_refused_with_the_datas_reason():
    with pytest.raises(PyfreightError) as err:
        runner_for(ARM).runtime_image(default_workspace())
    assert str(err.value).startswith(
        "running its programs: aarch64-apple-darwin: macOS programs cannot run on this"
    )


def test_macos_builds_scproxy_with_its_frameworks_uuid_from_libsystem_and_no_tkinter():
    macos = load_extension_data(os_name="macos")
    text = render_setup_local(MODULES, macos, "Modules/Setup.stdlib.in")
    static = text.split("*shared*")[0]
    assert "_scproxy _scproxy.c -framework SystemConfiguration -framework CoreFoundation\n" in static
    assert "_uuid _uuidmodule.c\n" in static  # no -luuid: libSystem has it
    assert "_tkinter" not in static
    assert "_tkinter  # Tk's Aqua port needs Apple's Cocoa" in text.split("*disabled*")[1]
    assert required_recipes(MODULES, macos) == ["bzip2"]
    # Linux keeps what it had: _tkinter with Tk and X11, _uuid from libuuid, no _scproxy
    linux = load_extension_data(os_name="linux")
    assert "tk" in required_recipes(MODULES, linux) and "libuuid" in required_recipes(MODULES, linux)
    assert "_scproxy  # macOS only" in render_setup_local(MODULES, linux, "x")


def test_no_x11_tk_or_libuuid_recipe_is_built_for_macos():
    macos = for_os(load_all(), "macos", None)
    assert not {"tk", "tcl", "libx11", "libxcb", "libuuid"} & set(macos)
    assert {"openssl", "ncurses", "libedit", "libffi", "zlib"} <= set(macos)
    with pytest.raises(PyfreightError, match="recipe tk is not built for macos: _tkinter is not built"):
        for_os(load_all(), "macos", ["tk"])


def test_a_framework_goes_from_the_setup_line_to_pythonjson_as_a_framework_link():
    rules = setup_rules(
        ["*static*\n_scproxy _scproxy.c -framework SystemConfiguration -framework CoreFoundation\n"]
    )
    objects, links = rules["_scproxy"]  # the framework names are not taken for modules
    assert objects == ("Modules/_scproxy.o",)
    assert list(rules) == ["_scproxy"]
    assert links == ("-framework SystemConfiguration", "-framework CoreFoundation")
    assert link_entry(links[0], {}, ARM) == {"name": "SystemConfiguration", "framework": True}
    with pytest.raises(PyfreightError) as err:
        link_entry("-framework Cocoa", {}, ARM)
    assert str(err.value) == (
        "the build links framework Cocoa, which aarch64-apple-darwin's files may not load "
        "(libc.needed of targets/aarch64-apple-darwin.yaml)"
    )


def test_cpythons_macos_link_variables_suit_zigs_linker():
    env = compiler_env(BuildOptions.parse("noopt"), ARM)
    assert env["LDSHARED"] == "$(CC) -shared -undefined dynamic_lookup"  # -bundle: zig#25451
    assert "-Wl,-stack_size,0x1000000" in env["LINKFORSHARED"]  # 16 MiB, read as hex
    assert env["MACOSX_DEPLOYMENT_TARGET"] == "11.0"
    assert "lld" not in " ".join(env.values()) and "-z" not in env["LDFLAGS"]
    assert "-Werror=unguarded-availability-new" in env["CFLAGS_NODIST"]
    args = configure_args(cpython_source("3.14"), BuildOptions.parse("noopt"), ARM)
    assert "--host=aarch64-apple-darwin20" in args
    assert "ac_cv_lib_ffi_ffi_call=no" in args  # our libffi, never taken for Apple's


def test_object_file_format_says_mach_o(tmp_path):
    obj = tmp_path / "a.o"
    obj.write_bytes(b"\xcf\xfa\xed\xfe" + bytes(28))
    assert object_file_format(obj, ARM) == "mach-o"


# What _scproxy, pylifecycle.c's system logger and remote debugging use of the
# interfaces zig's macOS headers lack, as they use it.
USES_APPLE_INTERFACES = """
#include <SystemConfiguration/SystemConfiguration.h>
#include <mach/mach.h>
#include <mach/mach_vm.h>
#include <os/log.h>
#include <sys/socket.h>
#include <sys/sys_domain.h>
#include <util.h>
int main(void) {
    int primary = 0, secondary = 0;
    if (openpty(&primary, &secondary, NULL, NULL, NULL) == 0 && forkpty(&primary, NULL, NULL, NULL) == 0)
        login_tty(secondary);
    if (socket(PF_SYSTEM, SOCK_DGRAM, SYSPROTO_CONTROL) < 0 && sizeof(struct sockaddr_sys) != 32)
        return 2;
    CFDictionaryRef proxies = SCDynamicStoreCopyProxies(NULL);
    CFNumberRef port = CFDictionaryGetValue(proxies, kSCPropNetProxiesHTTPPort);
    int value = 0;
    CFNumberGetValue(port, kCFNumberSInt32Type, &value);
    os_log_with_type(OS_LOG_DEFAULT, OS_LOG_TYPE_INFO, "%{public}s", "text");
    mach_vm_size_t size = 0;
    mach_vm_read_overwrite(mach_task_self(), 0, 0, 0, &size);
    CFRelease(proxies);
    return value + (int)strlen("as _scproxy.c, with string.h from the umbrella header");
}
"""


@pytest.mark.parametrize("found", [ARM, INTEL], ids=lambda t: t.triple)
def test_our_apple_declarations_compile_and_link_the_real_frameworks(found, tmp_path):
    """macos/include and macos/frameworks, as the build's compiler flags give them, with
    the pinned zig: the program loads the two frameworks by their system install names
    and libSystem, and breaks no Mach-O rule of the target."""
    zig = pinned_zig(found, default_workspace())
    source = tmp_path / "uses.c"
    source.write_text(USES_APPLE_INTERFACES)
    macos = REPO_ROOT / "macos"
    flags = ["-I", str(macos / "include"), "-F", str(macos / "frameworks")]
    out = tmp_path / "uses"
    command = [*zig.command, "-O2", "-s", "-Werror", *flags, str(source), "-o", str(out)]
    command += ["-framework", "SystemConfiguration", "-framework", "CoreFoundation"]
    subprocess.run(command, check=True, env={**os.environ, **zig.env}, timeout=300, cwd=tmp_path)
    facts = macho_facts(out, tmp_path)
    assert facts is not None
    assert {name for name, _ in facts.dylibs} == {
        "/usr/lib/libSystem.B.dylib",
        "/System/Library/Frameworks/CoreFoundation.framework/Versions/A/CoreFoundation",
        "/System/Library/Frameworks/SystemConfiguration.framework/Versions/A/SystemConfiguration",
    }
    wanted = {
        "CFDictionaryGetValue",
        "SCDynamicStoreCopyProxies",
        "os_log_type_enabled",
        "openpty",
        "login_tty",
    }
    assert wanted <= facts.undefined
    assert macho_problems(facts, found, frozenset()) == []


def test_the_build_compiler_names_the_overlay_that_the_sysroot_carries():
    for found in (ARM, INTEL):
        assert found.toolchain.sysroot["overlay"] == "macos"
        assert found.toolchain.compiler_flags == "-I/sysroot/macos/include -F/sysroot/macos/frameworks"
    assert sorted(p.name for p in (REPO_ROOT / "macos" / "frameworks").iterdir()) == [
        "CoreFoundation.framework",
        "SystemConfiguration.framework",
    ]


def test_stub_install_names_are_what_the_target_allows():
    """Each framework stub names an install name the target's files may load."""
    for stub in (REPO_ROOT / "macos" / "frameworks").glob("*.framework/*.tbd"):
        name = next(
            line.split("'")[1] for line in stub.read_text().splitlines() if line.startswith("install-name")
        )
        assert name in ARM.libc.needed and name in INTEL.libc.needed, stub
        assert Path(name).name == stub.stem


DEFAULT = '__attribute__((visibility("default")))'  # what escapes -fvisibility=hidden


def test_a_dependencys_symbols_are_linked_but_never_exported_once_hidden(tmp_path):
    """formats/macho_symbols.py on a real static library (two objects, the pinned zig,
    llvm-ar as the recipes archive): its symbols stay bound between the objects of a
    link, and the program exports none of them, only its own."""
    zig = pinned_zig(ARM, default_workspace())
    env = {**os.environ, **zig.env}
    sources = {
        "api.c": f"{DEFAULT} int SSL_new(void) {{ return 41; }}\n",
        "user.c": f"int SSL_new(void);\n{DEFAULT} int SSL_free(void) {{ return SSL_new(); }}\n",
        "main.c": "int SSL_free(void);\nint Py_Initialize(void) { return 1; }\n"
        "int main(void) { return SSL_free(); }\n",
    }
    for name, text in sources.items():
        (tmp_path / name).write_text(text)
        subprocess.run([*zig.command, "-O2", "-c", str(tmp_path / name), "-o", str(tmp_path / f"{name}.o")],
                       check=True, env=env, timeout=300, cwd=tmp_path)  # fmt: skip
    library = tmp_path / "libssl.a"
    # the host's llvm-ar of the build's LLVM, which make setup installs
    members = [str(tmp_path / "api.c.o"), str(tmp_path / "user.c.o")]
    subprocess.run([f"llvm-ar-{LLVM}", "qcD", str(library), *members], check=True)
    before = library.stat().st_size
    assert hide_in_library(library) == 2
    assert library.stat().st_size == before and hide_in_library(library) == 0  # in place, once
    program = tmp_path / "program"
    # linked as CPython links (no -O at the link: zig strips no unreferenced function then)
    subprocess.run([*zig.command, "-s", str(tmp_path / "main.c.o"), str(library), "-o", str(program)],
                   check=True, env=env, timeout=300, cwd=tmp_path)  # fmt: skip
    facts = macho_facts(program, tmp_path)
    assert facts is not None
    assert "Py_Initialize" in facts.exported and not {"SSL_new", "SSL_free"} & facts.exported


def test_a_broken_library_is_named_in_one_line(tmp_path):
    library = tmp_path / "libbroken.a"
    library.write_bytes(
        b"!<arch>\n" + b"api.o/          0           0     0     644     9999      `\n" + b"\xcf\xfa"
    )
    with pytest.raises(PyfreightError, match=r"libbroken.a: member api.o/ runs past the end of the archive"):
        hide_in_library(library)


def test_only_the_symbol_the_target_names_may_escape_and_only_for_that_target(tmp_path):
    """x86_64's data names OPENSSL_ia32cap_P (a common symbol zig's linker exports
    although private extern); any other bundled symbol, or the same on arm64, is refused."""
    from dataclasses import replace

    from tests.test_macho_rules import GOOD_DYLIB, SHIPPED

    intel = replace(GOOD_DYLIB, cpu="X86_64", minimum_os=(10, 15), signature=None)
    leaking = replace(intel, exported=intel.exported | {"OPENSSL_ia32cap_P"})
    assert macho_problems(leaking, INTEL, SHIPPED) == []
    more = replace(leaking, exported=leaking.exported | {"OPENSSL_cleanse"})
    assert macho_problems(more, INTEL, SHIPPED) == ["exports symbols of bundled libraries: OPENSSL_cleanse"]
    arm = replace(GOOD_DYLIB, exported=GOOD_DYLIB.exported | {"OPENSSL_ia32cap_P"})
    assert macho_problems(arm, ARM, SHIPPED) == ["exports symbols of bundled libraries: OPENSSL_ia32cap_P"]
