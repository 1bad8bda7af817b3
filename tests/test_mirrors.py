from __future__ import annotations

import pytest

from pyfreight.errors import PyfreightError
from pyfreight.sources.mirrors import find_debian_mirrors, pool_url


@pytest.fixture(autouse=True)
def no_env(monkeypatch):
    monkeypatch.delenv("PYFREIGHT_DEBIAN_MIRROR", raising=False)
    monkeypatch.delenv("PYFREIGHT_DEBIAN_SECURITY_MIRROR", raising=False)


def test_deb822_sources(tmp_path):
    d = tmp_path / "etc/apt/sources.list.d"
    d.mkdir(parents=True)
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n"
    )
    m = find_debian_mirrors(tmp_path)
    assert m.archive == "http://mirror.example/debian"
    assert m.security == "http://mirror.example/debian-security"


def test_one_line_sources_and_env_override(tmp_path, monkeypatch):
    (tmp_path / "etc/apt").mkdir(parents=True)
    (tmp_path / "etc/apt/sources.list").write_text(
        "# comment\ndeb [arch=amd64] http://one.example/debian/ bookworm main\n"
    )
    assert find_debian_mirrors(tmp_path).archive == "http://one.example/debian"
    monkeypatch.setenv("PYFREIGHT_DEBIAN_MIRROR", "http://other.example/debian")
    assert find_debian_mirrors(tmp_path).archive == "http://other.example/debian"


def test_no_mirror_is_a_clear_error(tmp_path):
    with pytest.raises(PyfreightError, match="PYFREIGHT_DEBIAN_MIRROR"):
        find_debian_mirrors(tmp_path)


def test_pool_paths():
    assert (
        pool_url("http://m/debian", "libffi", "f.tar.gz") == "http://m/debian/pool/main/libf/libffi/f.tar.gz"
    )
    assert pool_url("http://m/debian/", "openssl", "o.tgz") == "http://m/debian/pool/main/o/openssl/o.tgz"
