#!/usr/bin/env python3
"""modes.sh's output by mode: a run is in the slow-mailbox mode (S) where
its probe's cma/mbox time ratio is under 0.6, in the fast one (F) over 0.8,
left out between (the mode flipped while it ran). Per buffers kind,
collective and size: each algorithm's median time in each mode and its
ratio to that mode's fastest; 'worst' is its larger ratio of the two
modes, 'mean' its ratio weighted by the share of runs in each mode."""
import re, sys, statistics as st
from collections import defaultdict
t = defaultdict(list)          # (kind, mode, coll, size, alg) -> times
runs = defaultdict(int)
for line in open(sys.argv[1]):
    m = re.search(r'^\S+ (\S+) PROBE .*ratio cma/mbox ([\d.]+)', line)
    if not m or '|' not in line:
        continue
    kind, q = m.group(1), float(m.group(2))
    mode = 'S' if q < 0.6 else 'F' if q > 0.8 else None
    if not mode:
        continue
    runs[kind, mode] += 1
    for c, s, a, v in re.findall(r'(\w+):(\d+):(\w+)=([\d.]+)', line.split('|')[1]):
        t[kind, mode, c, int(s), a].append(float(v))
print("runs:", dict(runs))
rows = sorted({k[0:1] + k[2:4] for k in t})
for kind, c, s in rows:
    share = {m: runs[kind, m] / max(1, runs[kind, 'S'] + runs[kind, 'F']) for m in 'SF'}
    algs = sorted({k[4] for k in t if k[0] == kind and k[2] == c and k[3] == s})
    med = {(m, a): st.median(t[kind, m, c, s, a]) for m in 'SF' for a in algs if t[kind, m, c, s, a]}
    if not all((m, a) in med for m in 'SF' for a in algs):
        continue
    best = {m: min(med[m, a] for a in algs) for m in 'SF'}
    cells = []
    for a in algs:
        rs, rf = med['S', a] / best['S'], med['F', a] / best['F']
        cells.append((max(rs, rf), share['S'] * rs + share['F'] * rf, a, rs, rf))
    cells.sort()
    print("%-8s %-21s %8d  " % (kind, c, s) + "  ".join(
        "%s S%.0f(%.2f) F%.0f(%.2f) worst %.2f mean %.2f" % (a, med['S', a], rs, med['F', a], rf, w, mn)
        for w, mn, a, rs, rf in cells))
