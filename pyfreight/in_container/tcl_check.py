"""tkinter's Tcl interpreter, for the in-container checks of every target
(interpreter_checks.py, windows_checks.py import it from their own folder). Run by the
interpreter under test; needs nothing but the stdlib."""

from __future__ import annotations

import os
from pathlib import Path


def tcl_interpreter_check(library: Path) -> str:
    """tkinter.Tcl() evaluates a script, finds its script library at `library` (where the
    tree ships it) and Tcl's modules beside it (msgcat), and leaves os.environ as it
    found it: Tcl is told where its library is while it starts, not through variables
    left behind for every child process to inherit."""
    before = dict(os.environ)
    import tkinter

    tcl = tkinter.Tcl()
    assert dict(os.environ) == before, sorted(set(os.environ.items()) ^ set(before.items()))
    assert tcl.eval("expr {6 * 7}") == "42"
    found = Path(tcl.eval("info library"))
    assert found.resolve() == library.resolve(), (found, library)
    msgcat = tcl.eval("package require msgcat")
    return f"Tcl {tcl.eval('info patchlevel')} at {found}, msgcat {msgcat}"
