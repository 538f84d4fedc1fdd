#!/usr/bin/env python3
"""long_loop_ab.sh's output: per setting, each run's round time (the
allreduce's and the reduce-scatter's mean per call, added), their median,
and the median of the paired ratios to the model's run of the same round."""
import re, sys, statistics as st
from collections import defaultdict
rnd = defaultdict(dict)
for path in sys.argv[1:]:
    for line in open(path):
        m = re.match(r'(\d+) (\w+) allreduce 1MiB ([\d.]+) us .* reduce_scatter_block 2MiB ([\d.]+) us', line)
        if m:
            rnd[(path, int(m.group(1)))][m.group(2)] = float(m.group(3)) + float(m.group(4))
sets = sorted({s for r in rnd.values() for s in r}, key=lambda s: ['model', 'once', 'period5', 'period2', 'period1'].index(s))
for s in sets:
    times = [r[s] for r in rnd.values() if s in r]
    ratio = [r[s] / r['model'] for r in rnd.values() if s in r and 'model' in r]
    print("%-8s runs %2d  round us %s  median %.0f  /model median %.2f" % (
        s, len(times), " ".join("%.0f" % t for t in times), st.median(times), st.median(ratio)))
