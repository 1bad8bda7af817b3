"""Run by a cross build's build python (this machine's interpreter of the same CPython
version) for an install tree whose own interpreter cannot run here (macOS): prints the
JSON describe_python.py prints, as the tree's interpreter would say it.

describe_python.py runs with the tree as its home (PYTHONHOME, and the tree's stdlib
on PYTHONPATH), so the paths, the version and the bytecode facts are the tree's own, and
sysconfig reads the tree's own build-time variables (_PYTHON_SYSCONFIGDATA_NAME). What
the running interpreter would still answer for itself is then taken from the tree:
the platform tag, computed by the stdlib's own macOS rule from the tree's deployment
target; the ABI flags and the extension suffixes, with the tree's ABIFLAGS and SOABI; the
built-in modules, from the tree's inittab (argv[2], one name per line); the executable,
the tree's.

argv: the tree's interpreter (bin/python3.X), the file of built-in module names, and
the machine name its uname reports (the last part of the target's platform tag)."""

import json
import os
import subprocess
import sys
from pathlib import Path

python, builtins_file, machine = sys.argv[1:4]
home = str(Path(python).parent.parent)
stdlib = Path(home) / "lib" / Path(python).name
sysconfigdata = sorted(stdlib.glob("_sysconfigdata_*.py"))
if len(sysconfigdata) != 1:
    sys.exit(f"{stdlib}: expected one _sysconfigdata_*.py, found {len(sysconfigdata)}")
env = dict(
    os.environ,
    PYTHONHOME=home,
    PYTHONPATH=str(stdlib),
    _PYTHON_SYSCONFIGDATA_NAME=sysconfigdata[0].stem,
)
script = Path(__file__).with_name("describe_python.py")
described = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
if described.returncode != 0:
    sys.exit(f"describe_python.py failed:\n{described.stderr}")
facts = json.loads(described.stdout)
config = facts["config_vars"]
# The build python's own ABI flags are those of a GIL, release build; the tree's are in
# its build-time variables (t: free-threaded, d: debug).
facts["python_abi_tag"] = config["abiflags"] = config["ABIFLAGS"]

sys.path.insert(0, str(stdlib))
import _osx_support  # noqa: E402  (the tree's own copy: the rule its sysconfig applies)

_, release, platform_machine = _osx_support.get_platform_osx(config, "macosx", "", machine)
facts["python_platform_tag"] = f"macosx-{release}-{platform_machine}"
own_soabi = f"cpython-{sys.version_info.major}{sys.version_info.minor}{sys.abiflags}"
suffixes = []
for suffix in facts["python_suffixes"]["extension"]:
    if "abi3" in suffix and "t" in config["ABIFLAGS"] and "t" not in sys.abiflags:
        continue  # the stable ABI has no free-threaded form in this version
    suffixes.append(suffix.split(own_soabi)[0] + config["SOABI"] + ".so" if own_soabi in suffix else suffix)
facts["python_suffixes"]["extension"] = suffixes
facts["builtin_module_names"] = sorted(Path(builtins_file).read_text().split())
facts["executable"] = python
json.dump(facts, sys.stdout, indent=1, sort_keys=True)
