#!/usr/bin/env python3
"""ab_waits_table.py OLD.csv... -- NEW.csv...: per collective and size, the median time of
auto's row before and after, and the median of its speedup over MPICH's call timed in the same
run (the VM's speed moves 2x between spells, and MPICH's times with it)."""
import csv, statistics, sys
args = sys.argv[1:]
cut = args.index('--')
def load(files):
    t, nat = {}, {}
    for f in files:
        for row in csv.DictReader(open(f)):
            if not row['algorithm'].startswith('auto'):
                continue
            k = (row['collective'], int(row['bytes']))
            t.setdefault(k, []).append(float(row['time_us']))
            nat.setdefault(k, []).append(float(row['native_us']))
    return t, nat
old, onat = load(args[:cut])
new, nnat = load(args[cut + 1:])
print('%-22s %8s %9s %9s %9s %9s %9s' % ('collective', 'bytes', 'old us', 'new us', 'old x', 'new x', 'new/old x'))
for k in sorted(old):
    if k not in new:
        continue
    so = statistics.median(n / t for t, n in zip(old[k], onat[k]))
    sn = statistics.median(n / t for t, n in zip(new[k], nnat[k]))
    print('%-22s %8d %9.2f %9.2f %8.2fx %8.2fx %8.2fx' % (k[0], k[1], statistics.median(old[k]),
          statistics.median(new[k]), so, sn, sn / so))
