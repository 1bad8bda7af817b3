"""Real builds of zlib, xz and OpenSSL in the build container, from an empty build
folder, checked with LLVM's tools and pyelftools."""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile
from elftools.elf.gnuversions import GNUVerNeedSection

from pyfreight.container.images import ensure_images
from pyfreight.deps.scheduler import build_deps
from pyfreight.paths import Workspace, default_workspace
from pyfreight.sources.recipes import load_all
from pyfreight.targets import default_target
from pyfreight.toolchain import LLVM, build_environment
from tests.in_image import bash_in_image
from tests.tiers import FROM_SCRATCH

# Builds OpenSSL and the others again in an empty build folder: test-all's part.
pytestmark = [pytest.mark.container, pytest.mark.part(FROM_SCRATCH)]
NAMES = ["openssl", "xz", "zlib"]
RECIPES = load_all()

TEST_PROGRAM = r"""
#include <stdio.h>
#include <lzma.h>
#include <openssl/ssl.h>
#include <zlib.h>
int main(void) {
    SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
    printf("%s|%s|%s|%d\n", OpenSSL_version(OPENSSL_VERSION), lzma_version_string(),
           zlibVersion(), ctx != NULL);
    return 0;
}
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    image = ensure_images(default_workspace(), default_target())  # images are shared; sysroot kept in build/
    ws = Workspace(tmp_path_factory.mktemp("empty") / "build")
    downloads = default_workspace().downloads
    if downloads.is_dir():  # reuse verified downloads as a mirror; they are re-verified
        os.environ["PYFREIGHT_MIRRORS"] = str(downloads)
    first = build_deps(NAMES, default_target(), ws, parallel=2, jobs=os.cpu_count() or 1)
    prefix = tmp_path_factory.mktemp("prefix")
    for artifact in first.artifacts.values():
        with tarfile.open(artifact.path) as tar:
            tar.extractall(prefix, filter="tar")
    return ws, image, first, prefix


def in_container(image, prefix: Path, script: str) -> str:
    return bash_in_image(image.tag, prefix, script).stdout


def test_everything_was_built_from_scratch(built):
    _, _, first, _ = built
    assert sorted(first.built) == NAMES and first.reused == []


def test_static_archives_and_no_shared_objects(built):
    _, _, first, _ = built
    expected = {
        "openssl": {"lib/libssl.a", "lib/libcrypto.a"},
        "xz": {"lib/liblzma.a"},
        "zlib": {"lib/libz.a"},
    }
    for name, artifact in first.artifacts.items():
        with tarfile.open(artifact.path) as tar:
            names = set(tar.getnames())
        assert expected[name] <= names
        assert not [n for n in names if ".so" in Path(n).name], f"{name} shipped a shared library"
        assert any(n.startswith(f"share/licenses/{name}/") for n in names)


def test_expected_symbols_are_defined(built):
    _, image, _, prefix = built
    out = in_container(
        image,
        prefix,
        'for a in libssl libcrypto liblzma libz; do echo "== $a"; '
        f"llvm-nm-{LLVM} --defined-only --extern-only lib/$a.a; done",
    )
    sections = dict(part.split("\n", 1) for part in out.split("== ")[1:])
    assert " T SSL_new\n" in sections["libssl"]
    assert " T EVP_DigestInit_ex\n" in sections["libcrypto"]
    assert " T lzma_code\n" in sections["liblzma"]
    assert " T deflate\n" in sections["libz"]


def test_objects_are_x86_64_elf(built, tmp_path):
    _, image, _, prefix = built
    in_container(
        image,
        prefix,
        "mkdir -p objs && cd objs && for a in ../lib/*.a; do "
        f"d=$(basename $a .a); mkdir $d; (cd $d && llvm-ar-{LLVM} x ../../lib/$d.a); done",
    )
    objects = sorted((prefix / "objs").rglob("*.o"))
    assert len(objects) > 100
    for obj in objects:
        with obj.open("rb") as fh:
            elf = ELFFile(fh)
            assert (elf.elfclass, elf["e_machine"], elf["e_type"]) == (64, "EM_X86_64", "ET_REL"), obj


def test_links_and_needs_at_most_the_glibc_ceiling(built):
    _, image, _, prefix = built
    (prefix / "t.c").write_text(TEST_PROGRAM)
    cc = build_environment(default_target(), jobs=1, source_date_epoch=0)["CC"]
    out = in_container(
        image,
        prefix,
        f"{cc} -fuse-ld=lld -O2 -Iinclude t.c -o t -Llib -lssl -lcrypto -llzma -lz -lpthread -ldl && ./t",
    )
    openssl, lzma, zlib, ok = out.strip().split("|")
    assert openssl.startswith(f"OpenSSL {RECIPES['openssl'].version} ")
    assert lzma == RECIPES["xz"].version and zlib == RECIPES["zlib"].version and ok == "1"
    versions = set()
    with (prefix / "t").open("rb") as fh:
        for section in ELFFile(fh).iter_sections():
            if isinstance(section, GNUVerNeedSection):
                for _, auxes in section.iter_versions():
                    versions |= {a.name for a in auxes if a.name.startswith("GLIBC_")}
    assert versions
    newest = max(tuple(int(x) for x in v[len("GLIBC_") :].split(".")) for v in versions)
    assert newest <= default_target().libc.ceiling, sorted(versions)


def test_second_run_rebuilds_nothing(built):
    ws, _, first, _ = built
    again = build_deps(NAMES, default_target(), ws)
    assert again.built == [] and sorted(again.reused) == NAMES
    for name in NAMES:
        assert again.artifacts[name].path.read_bytes() == first.artifacts[name].path.read_bytes()
