

# Added by pyfreight: the Tcl and Tk script libraries ship inside this relocatable
# install tree (lib/tcl8.6, lib/tk8.6). Tcl looks for them beside its executable,
# which fails when python is started through a symlink; point it at them unless the
# user chose others. Tcl and Tk read TCL_LIBRARY and TK_LIBRARY while an interpreter
# is created and while it loads Tk, so they are in os.environ only then: set for good,
# every child process would inherit them (CPython's test_subprocess saw its
# environment changed).
def _pyfreight_script_libraries():
    import functools
    import os
    import sys

    def with_libraries(method):
        @functools.wraps(method)
        def wrapper(*args, **kwargs):
            added = []
            for variable, name in (("TCL_LIBRARY", "tcl"), ("TK_LIBRARY", "tk")):
                path = os.path.join(sys.base_prefix, "lib", f"{name}{TclVersion}")
                if variable not in os.environ and os.path.isdir(path):
                    os.environ[variable] = path
                    added.append(variable)
            try:
                return method(*args, **kwargs)
            finally:
                for variable in added:
                    os.environ.pop(variable, None)

        return wrapper

    Tk.__init__ = with_libraries(Tk.__init__)
    Tk.loadtk = with_libraries(Tk.loadtk)


_pyfreight_script_libraries()
del _pyfreight_script_libraries
