"""A wheel the in-container checks of every target install with pip
(interpreter_checks.py, windows_checks.py import it from their own folder). Run by the
interpreter under test; needs nothing but the stdlib."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path


def tiny_wheel(folder: Path) -> Path:
    """A pure-Python wheel written here (the container has no network): a module and a
    console script."""
    files = {
        "pfcheck/__init__.py": "def main():\n    print('pfcheck', __file__)\n",
        "pfcheck-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: pfcheck\nVersion: 1.0\n",
        "pfcheck-1.0.dist-info/WHEEL": (
            "Wheel-Version: 1.0\nGenerator: pyfreight-check\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
        "pfcheck-1.0.dist-info/entry_points.txt": "[console_scripts]\npfcheck = pfcheck:main\n",
    }
    record = []
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(text.encode())}")
    files["pfcheck-1.0.dist-info/RECORD"] = "\n".join([*record, "pfcheck-1.0.dist-info/RECORD,,"]) + "\n"
    wheel = folder / "pfcheck-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return wheel
