"""Run by an installed interpreter of ours (in a container): prints, as JSON, what
PYTHON.json says about the interpreter itself. Asking the interpreter, rather than
parsing its build files, keeps those fields true by construction."""

import importlib.machinery as machinery
import importlib.util
import json
import platform
import subprocess
import sys
import sysconfig

# What the interpreter imports to start (isolated, with site, as a plain `python3 -I`
# starts): the built-in ones among them are what a re-linked interpreter cannot leave out.
_STARTUP = "import sys; print(' '.join(sorted(sys.modules)))"
startup = subprocess.run([sys.executable, "-I", "-c", _STARTUP], capture_output=True, text=True, check=True)

impl = sys.implementation
# The ABI flags the paths are expanded with: the build's own (ABIFLAGS). They are
# sys.abiflags when an interpreter describes itself; when a cross build's build python
# describes a tree it cannot run (describe_foreign.py), the tree's differ from its own
# for a free-threaded or debug tree (include/python3.14t, not include/python3.14).
abiflags = sysconfig.get_config_var("ABIFLAGS")
path_vars = {"abiflags": abiflags} if isinstance(abiflags, str) else None
facts = {
    "python_version": platform.python_version(),
    "python_major_minor_version": sysconfig.get_python_version(),
    # sys.abiflags is Unix's; Windows' sysconfig has the same letters (t: free-threaded)
    "python_abi_tag": getattr(sys, "abiflags", sysconfig.get_config_var("ABIFLAGS") or ""),
    "python_platform_tag": sysconfig.get_platform(),
    "python_implementation_name": impl.name,
    "python_implementation_cache_tag": impl.cache_tag,
    "python_implementation_hex_version": impl.hexversion,
    "python_implementation_version": [str(part) for part in impl.version],
    "python_bytecode_magic_number": importlib.util.MAGIC_NUMBER.hex(),
    "python_suffixes": {
        "source": list(machinery.SOURCE_SUFFIXES),
        "bytecode": list(machinery.BYTECODE_SUFFIXES),
        "debug_bytecode": list(machinery.DEBUG_BYTECODE_SUFFIXES),
        "optimized_bytecode": list(machinery.OPTIMIZED_BYTECODE_SUFFIXES),
        "extension": list(machinery.EXTENSION_SUFFIXES),
    },
    "paths": sysconfig.get_paths(vars=path_vars),
    "paths_abstract": sysconfig.get_paths(expand=False),
    "config_vars": {k: str(v) for k, v in sorted(sysconfig.get_config_vars().items())},
    "prefix": sys.prefix,
    "executable": sys.executable,
    "builtin_module_names": sorted(sys.builtin_module_names),
    "startup_modules": startup.stdout.split(),
}
json.dump(facts, sys.stdout, indent=1, sort_keys=True)
