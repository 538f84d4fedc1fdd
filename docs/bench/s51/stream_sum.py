#!/usr/bin/env python3
"""stream_ab.sh's output: per row, the median time with ordinary copies
(0) and streaming stores (1) over all runs, and over the runs whose probe
said the cores shared a cache (F: cma/mbox ratio over 0.8) or not (S:
under 0.6); then the paired ratio 1/0 within each round, median."""
import re, sys, statistics as st
from collections import defaultdict
t = defaultdict(list)
pair = defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) < 5:
        continue
    rnd, touch, q, s = f[0], f[1], float(f[2]), f[3]
    mode = 'S' if q < 0.6 else 'F' if q > 0.8 else '?'
    for k, v in re.findall(r'(\S+:\d+)=([\d.]+)', line):
        for m in ('all', mode):
            t[(k, m, s)].append(float(v))
        pair[(rnd, k)][s] = float(v)
rows = sorted({k[0] for k in t}, key=lambda k: (k.split(':')[0], int(k.split(':')[1])))
print("%-28s %8s %8s %6s | %7s %7s %5s | %7s %7s %5s | %s" % ("row", "all:copy", "stream", "1/0",
      "F:copy", "stream", "1/0", "S:copy", "stream", "1/0", "paired 1/0"))
for k in rows:
    cells = []
    for m in ('all', 'F', 'S'):
        a, b = t.get((k, m, '0')), t.get((k, m, '1'))
        if a and b:
            cells.append((st.median(a), st.median(b), st.median(b) / st.median(a)))
        else:
            cells.append((0, 0, 0))
    pr = [p['1'] / p['0'] for (r, kk), p in pair.items() if kk == k and '0' in p and '1' in p]
    print("%-28s %8.1f %8.1f %6.2f | %7.1f %7.1f %5.2f | %7.1f %7.1f %5.2f | %.2f (%d)" % (
        (k,) + cells[0] + cells[1] + cells[2] + (st.median(pr), len(pr))))
