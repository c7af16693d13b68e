#!/usr/bin/env python3
"""The language server's files call each other without a circle.

usage: layers.py libddxlsp.a [server/lsp] [--print]

Reads the archive's symbol tables (nm): an object that leaves a symbol
undefined which another object defines calls into it. Calls into the
transport (transport.c: the write queue) and into rpc.c's outgoing messages
(notify, reply, log, ...) are the normal private-header pattern every file
uses (like libuv's unix/internal.h) and are not edges; every other call
must go one way: the graph of files is acyclic. --print shows the layers.

With the source folder, also: each part of the server struct is written
(assigned, incremented, its address taken) only by the file its type's
comment in internal.h names, e.g. "The transport (transport.c): ...".
Exit 0 when both hold, 1 with the circle or the write named otherwise."""
import re, os
import subprocess, sys, collections

BASE = {'transport.c', 'rpc.c'}  # called by every layer; they call up only through dispatch
# what the base may call above itself: rpc.c dispatches (its method table
# names the handlers); the transport hands whole messages to rpc.c and tells
# the lifecycle when the client is gone
UP = {'transport.c': {'ddx_lsp_process_batch', 'ddx_lsp_stop'}}

def tables(lib):
    out = subprocess.run(['nm', lib], capture_output=True, text=True, check=True).stdout
    defs, undef, cur = {}, collections.defaultdict(set), None
    for line in out.splitlines():
        if line.endswith('.o:'):
            cur = line[:-1].split('/')[-1].replace('.c.o', '.c').replace('.o', '.c')
            continue
        parts = line.split()
        if not cur or len(parts) < 2: continue
        kind, name = parts[-2], parts[-1]
        if kind == 'U': undef[cur].add(name)
        elif kind in 'TDBR': defs[name] = cur
    return defs, undef

def owners_ok(src):
    """1 (and the offending lines) when a file writes another file's part."""
    h = open(os.path.join(src, 'internal.h')).read()
    owner = {}
    for m in re.finditer(r'/\*((?:(?!\*/).)*)\*/\s*typedef struct (\w+) \{', h, re.S):
        f = re.search(r'\((\w+\.c)\b', m.group(1))
        if f: owner[m.group(2) + '_t'] = f.group(1)
    server = h[h.index('struct ddx_lsp_server {'):]
    server = server[:server.index('};')]
    part = {m.group(2): owner[m.group(1)] for m in re.finditer(r'(\w+_t) (\w+);', server) if m.group(1) in owner}
    bad = []
    for f in sorted(os.listdir(src)):
        if not f.endswith('.c'): continue
        for n, line in enumerate(open(os.path.join(src, f)), 1):
            for m in re.finditer(r'(&\s*)?\bs->(\w+)\.[\w.]+(\s*(?:[-+*/|&]?=(?!=)|\+\+|--))?', line):
                g = m.group(2)
                if g in part and part[g] != f and (m.group(1) or m.group(3)):
                    bad.append(f'{f}:{n}: writes s->{g} (owned by {part[g]}): {line.strip()}')
    for b in bad: print(b)
    if not part: print('internal.h: no owned parts found'); return 1
    return 1 if bad else 0

def main():
    lib = sys.argv[1]
    defs, undef = tables(lib)
    files = sorted(set(defs.values()) | set(undef))
    edges = collections.defaultdict(set)
    for f in files:
        for name in undef[f]:
            g = defs.get(name)
            if g and g != f and g not in BASE:
                edges[f].add(g)
    for f, allowed in UP.items():
        extra = sorted(n for n in undef[f] if defs.get(n) not in (None, f) and n not in allowed
                       and defs[n] not in BASE)
        if extra:
            print(f'{f} calls up into ' + ', '.join(f'{n} ({defs[n]})' for n in extra)); return 1
    # Kahn's algorithm: a file whose callees are all placed gets the next layer
    layer, left = {}, set(files)
    while left:
        ready = [f for f in left if all(g in layer for g in edges[f])]
        if not ready:
            # name one circle
            start = sorted(left)[0]; path = [start]; seen = {start}
            while True:
                nxt = sorted(g for g in edges[path[-1]] if g in left)[0]
                if nxt in seen:
                    cyc = path[path.index(nxt):] + [nxt]
                    why = [f'{a} -> {b} ({", ".join(sorted(n for n in undef[a] if defs.get(n) == b))})' for a, b in zip(cyc, cyc[1:])]
                    print('circle: ' + '\n        '.join(why)); return 1
                path.append(nxt); seen.add(nxt)
        for f in ready: layer[f] = 1 + max((layer[g] for g in edges[f]), default=-1)
        left -= set(ready)
    src = next((a for a in sys.argv[2:] if not a.startswith('--')), None)
    if src and owners_ok(src): return 1
    if '--print' in sys.argv:
        for n in range(max(layer.values()) + 1):
            print(f'layer {n}: ' + ', '.join(sorted(f for f in layer if layer[f] == n)))
    print(f'{len(files)} files, no circle ({sum(len(v) for v in edges.values())} calls between them)'
          + (', each part of the server written by its owner only' if src else ''))
    return 0

sys.exit(main())
