#!/usr/bin/env python3
"""Per dpcoll_bench CSV: algorithm rows whose model time is within 30% of the
measured one, and auto's time over the fastest algorithm's per row
(geometric mean, the worst), per collective and in all."""
import csv, math, sys
from collections import defaultdict
for f in sys.argv[1:]:
    rows = list(csv.DictReader(open(f)))
    within = defaultdict(int); tot = defaultdict(int)
    best = {}; auto = {}
    for r in rows:
        c = r['collective']; k = (c, int(r['bytes'])); t = float(r['time_us'])
        if r['algorithm'].startswith('auto'):
            auto[k] = (t, r['algorithm'])
            continue
        m = float(r['model_us'] or -1)
        if m > 0:
            tot[c] += 1; within[c] += abs(m - t) <= 0.3 * t
        if k not in best or t < best[k][0]:
            best[k] = (t, r['algorithm'])
    print(f)
    for c in list(dict.fromkeys(r['collective'] for r in rows)) + ['all']:
        ks = [k for k in auto if k in best and (c == 'all' or k[0] == c)]
        g = [auto[k][0] / best[k][0] for k in ks]
        w = sum(within.values()) if c == 'all' else within[c]
        n = sum(tot.values()) if c == 'all' else tot[c]
        worst = max(ks, key=lambda k: auto[k][0] / best[k][0])
        print(f"  {c:22s} model within 30%: {w:3d} of {n:3d}; auto/fastest "
              f"{math.exp(sum(map(math.log, g)) / len(g)):.3f}, worst {max(g):.2f} "
              f"({worst[1]} B: {auto[worst][1]}, fastest {best[worst][1]})")
