"""Meta-path finder that imports modules from the static code objects in _dfcode."""
import os, sys, _dfcode
from importlib.machinery import ModuleSpec

MANIFEST = {}
def load_manifest(path):
    with open(path) as f:
        for line in f:
            name, p, is_pkg, n = line.split()
            MANIFEST[name] = (p, is_pkg == '1')

class DFLoader:
    def create_module(self, spec):
        return None
    def exec_module(self, module):
        code = _dfcode.get(module.__spec__.name)
        exec(code, module.__dict__)
    def is_package(self, fullname):
        return MANIFEST[fullname][1]

_loader = DFLoader()
class DFFinder:
    @classmethod
    def find_spec(cls, name, path=None, target=None):
        info = MANIFEST.get(name)
        if info is None:
            return None
        origin, is_pkg = info
        spec = ModuleSpec(name, _loader, origin=origin, is_package=is_pkg)
        spec.has_location = True
        if is_pkg:
            spec.submodule_search_locations = [os.path.dirname(origin)]
        return spec
    @classmethod
    def invalidate_caches(cls):
        pass

def install(manifest=os.environ.get('DF_MANIFEST')):
    load_manifest(manifest)
    sys.meta_path.insert(0, DFFinder)
