"""Runs pip (`python -I pip_under_wine.py install ...`) in a process adapted to Wine by
wine_process.py, which sits beside this file: `pip install --target` moves what it
installed out of its temporary folder with shutil, whose copies call CopyFile2, which
Wine 8.0 lacks (the process aborts). On Windows itself nothing is changed."""

import os
import runpy
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the same file, as the package names it
    from pyfreight.in_container.wine_process import adapt_process_to_wine
else:  # run from the folder it is in, beside wine_process.py (-I leaves that folder off sys.path)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from wine_process import adapt_process_to_wine

adapt_process_to_wine()
sys.argv[0] = "pip"
runpy.run_module("pip", run_name="__main__", alter_sys=True)
