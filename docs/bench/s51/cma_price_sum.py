#!/usr/bin/env python3
"""Summary of cma_price_ab.sh's output: per buffers kind, collective and
size, the algorithms each side chose, the median over rounds of the paired
ratio of times (probe on / probe off: below 1, the priced choice was
faster), how many rounds it was faster, and each side's median speedup
over MPICH (its own run's native time)."""
import sys, statistics as st
from collections import defaultdict
rows = defaultdict(dict)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) != 8:
        continue
    r, t, p, c, b, al, tm, nat = f
    rows[(t, c, int(b), int(r))][p] = (al, float(tm), float(nat))
keys = sorted({k[:3] for k in rows})
print("%-5s %-21s %9s %-26s %-26s %6s %5s %7s %7s" % ("touch", "collective", "bytes", "probe off",
      "probe on", "on/off", "wins", "spd_off", "spd_on"))
for k in keys:
    pairs = [rows[k + (r,)] for r in sorted({kk[3] for kk in rows if kk[:3] == k})]
    pairs = [x for x in pairs if "0" in x and "1" in x]
    ratio = [x["1"][1] / x["0"][1] for x in pairs]
    wins = sum(q < 1 for q in ratio)
    names = lambda p: "/".join(sorted({x[p][0] for x in pairs}))
    spd = lambda p: st.median(x[p][2] / x[p][1] for x in pairs)
    print("%-5s %-21s %9d %-26s %-26s %6.3f %2d/%-2d %6.2fx %6.2fx" % (k[0], k[1], k[2], names("0"),
          names("1"), st.median(ratio), wins, len(ratio), spd("0"), spd("1")))
