"""measure.py MODE MANIFEST [MARSHAL_BLOBS]
MODE: init | marshal | import_normal | import_static
Prints one JSON line."""
import gc, json, os, struct, sys, time
mode, manifest = sys.argv[1], sys.argv[2]
names = []
for line in open(manifest):
    n = line.split()[0]
    if n.endswith('__main__') or n in ('antigravity', 'this', '__hello__') or n.startswith('__phello__') or n == 'dfsimple':
        continue
    names.append(n)
res = {'mode': mode, 'n_modules_listed': len(names)}
if mode == 'init':
    import _dfcode
    res['init_all_ns'] = _dfcode.init_all()
elif mode == 'marshal':
    import marshal
    data = open(sys.argv[3], 'rb').read()
    blobs = []
    pos = 0
    while pos < len(data):
        n, = struct.unpack_from('<I', data, pos); pos += 4
        blobs.append(data[pos:pos + n]); pos += n
    res['n_blobs'] = len(blobs); res['marshal_bytes'] = sum(map(len, blobs))
    for p in ('first_pass_ns', 'second_pass_ns'):
        tot = 0
        keep = []
        for b in blobs:
            t0 = time.perf_counter_ns()
            keep.append(marshal.loads(b))
            tot += time.perf_counter_ns() - t0
        res[p] = tot
elif mode in ('import_normal', 'import_static'):
    if mode == 'import_static':
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import dfimport; dfimport.install(manifest)
        import _dfcode
    ok = fail = 0
    pre = set(sys.modules)
    t0 = time.perf_counter_ns()
    for n in names:
        try:
            __import__(n)
            ok += 1
        except BaseException:
            fail += 1
    res['import_total_ns'] = time.perf_counter_ns() - t0
    res['ok'] = ok; res['fail'] = fail
    new = set(sys.modules) - pre
    res['new_modules_in_sys_modules'] = len(new)
    if mode == 'import_static':
        import dfimport
        res['new_loaded_from_static'] = sum(1 for m in new if type(getattr(sys.modules[m], '__loader__', None)).__name__ == 'DFLoader')
    t1 = time.perf_counter_ns(); gc.collect(); res['gc_collect_ns'] = time.perf_counter_ns() - t1
print(json.dumps(res))
