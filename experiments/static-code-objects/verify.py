"""verify.py MANIFEST: compare every static code object with compile() of the same source."""
import sys, _dfcode, marshal, types
def walk(a, b, path, errs):
    if a != b:
        errs.append(f'{path}: code != (name {a.co_name!r})')
    for f in ('co_filename', 'co_qualname', 'co_varnames', 'co_cellvars', 'co_freevars',
              'co_nlocals', 'co_stacksize', 'co_exceptiontable', 'co_linetable', 'co_code'):
        if getattr(a, f) != getattr(b, f):
            errs.append(f'{path}.{a.co_qualname}: {f} differs')
    if list(a.co_positions()) != list(b.co_positions()):
        errs.append(f'{path}.{a.co_qualname}: positions differ')
    ca = [c for c in a.co_consts if isinstance(c, types.CodeType)]
    cb = [c for c in b.co_consts if isinstance(c, types.CodeType)]
    for x, y in zip(ca, cb):
        walk(x, y, path, errs)
    for n in a.co_names + a.co_varnames:
        if sys.intern(n) is not n:
            errs.append(f'{path}.{a.co_qualname}: name {n!r} not interned')
n = bad = 0
for line in open(sys.argv[1]):
    name, path, is_pkg, ln = line.split()
    st = _dfcode.get(name)
    ref = compile(open(path, 'rb').read(), path, 'exec', optimize=0, dont_inherit=True)
    errs = []
    walk(st, ref, name, errs)
    # marshal round trip of the static object must be byte-identical modulo interning flags
    if marshal.loads(marshal.dumps(st)) != ref:
        errs.append(f'{name}: marshal round trip differs')
    n += 1
    if errs:
        bad += 1
        print('MISMATCH', name, errs[:3])
print(f'verified {n} modules, {bad} with mismatches')
