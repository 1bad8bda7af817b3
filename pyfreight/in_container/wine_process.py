"""Adapts one Python process to a gap of Wine, so that what it runs takes a path a real
Windows machine takes too. Imported by regrtest_wine.py, and put on PYTHONPATH as
sitecustomize.py by check-install and test-dist for runs under Wine, so that every
process of such a run (venv's, ensurepip's and pip's children included) is adapted.

- shutil.copy2 (so venv, which copies the launcher, and ensurepip) calls CopyFile2
  through _winapi whenever _winapi has it. Wine 8.0 does not implement CopyFile2: it
  aborts the process. Without the name, shutil copies the bytes and then the file's
  times and mode, the path it also takes on Windows when CopyFile2 is refused
  (ERROR_ACCESS_DENIED). Nothing else in the stdlib calls CopyFile2.

venv starts the new environment's ensurepip without PYTHONPATH, so a check under Wine
makes the venv --without-pip and runs that ensurepip itself, with the run's environment.

Nothing changes on Windows itself: the adaptation is made only where ntdll says it is
Wine's (wine_get_version)."""

from __future__ import annotations

import sys


def running_under_wine() -> bool:
    if sys.platform != "win32":
        return False
    import ctypes

    return hasattr(ctypes.WinDLL("ntdll"), "wine_get_version")


def adapt_process_to_wine() -> None:
    if not running_under_wine():
        return
    import _winapi

    if hasattr(_winapi, "CopyFile2"):
        del _winapi.CopyFile2


if __name__ == "sitecustomize":  # copied onto PYTHONPATH under that name
    adapt_process_to_wine()
