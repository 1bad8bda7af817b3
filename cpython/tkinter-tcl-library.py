

# Added by pyfreight: the Tcl and Tk script libraries ship inside this relocatable
# install tree (lib/tcl8.6, lib/tk8.6). Tcl looks for them beside its executable,
# which fails when python is started through a symlink; point it at them unless the
# user chose others.
def _pyfreight_script_libraries():
    import os
    import sys

    for variable, name in (("TCL_LIBRARY", "tcl"), ("TK_LIBRARY", "tk")):
        path = os.path.join(sys.base_prefix, "lib", f"{name}{TclVersion}")
        if variable not in os.environ and os.path.isdir(path):
            os.environ[variable] = path


_pyfreight_script_libraries()
del _pyfreight_script_libraries
