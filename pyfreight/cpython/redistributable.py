"""A vendor's DLLs a tree ships as the vendor built them (targets/*.yaml
pe.redistributed; Windows: Microsoft's Visual C++ runtime beside python.exe, which every
MSVC-built extension module on PyPI imports): read out of their pinned wheel, which
fetch_source verifies by sha256 first, and each file checked against its own sha256
before a build is handed it."""

from __future__ import annotations

import hashlib
import zipfile
from pathlib import Path

from pyfreight.errors import PyfreightError
from pyfreight.formats.pe import read_pe
from pyfreight.logs import say
from pyfreight.sources.fetch import fetch_source
from pyfreight.targets import Redistributable

# Bounds for reading a member of the (verified) wheel: the VC runtime's DLLs are < 1 MB.
MAX_MEMBER_BYTES = 64 * 1024 * 1024


def _read(wheel: Path, member: str, what: str) -> bytes:
    with zipfile.ZipFile(wheel) as zf:
        try:
            info = zf.getinfo(member)
        except KeyError:
            raise PyfreightError(f"{wheel.name} has no {member} ({what}): correct the target file") from None
        if info.file_size > MAX_MEMBER_BYTES:
            raise PyfreightError(f"{wheel.name}: {member} is {info.file_size} bytes, more than any {what}")
        return zf.read(info)


def vendor_files(redistributable: Redistributable, downloads: Path, machine: str) -> dict[str, bytes]:
    """File name in the tree -> its bytes, each as pinned and each an image for `machine`
    (a COFF machine name), which the pin alone does not say: PyPI's msvc-runtime wheels
    for win32 hold x64 DLLs."""
    wheel = fetch_source(redistributable.wheel, downloads, log=say)
    files = {}
    for name, member in sorted(redistributable.members.items()):
        data = _read(wheel, member, name)
        image = read_pe(data, member)
        if image is None or image.machine != machine:
            raise PyfreightError(
                f"{redistributable.wheel.file}: {member} is "
                f"{'no PE image' if image is None else 'for ' + image.machine}, not {machine}: "
                "pin a file of the target's machine (targets/*.yaml pe.redistributed)"
            )
        found, pinned = hashlib.sha256(data).hexdigest(), redistributable.sha256[name]
        if found != pinned:
            raise PyfreightError(
                f"{redistributable.wheel.file}: {member} has sha256 {found}, not the pinned {pinned} "
                "(targets/*.yaml pe.redistributed)"
            )
        files[name] = data
    return files


def license_text(redistributable: Redistributable, downloads: Path) -> bytes:
    """The vendor's terms, as the wheel carries them."""
    wheel = fetch_source(redistributable.wheel, downloads, log=say)
    return _read(wheel, redistributable.license_member, "license text")
