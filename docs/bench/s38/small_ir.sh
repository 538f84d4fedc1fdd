#!/bin/bash
# small_ir.sh PRELOAD(none|path) coll bytes iters: rank 0's total instructions
# under callgrind (rank 1 runs natively). Build first:
#   mkdir -p /tmp/small && mpicc -O2 -o /tmp/small/loop small_loop.c
# Per call: (total at 12000 calls - total at 2000) / 10000.
pre=$1; shift
out=/tmp/small/cg.$$.out
if [ "$pre" = none ]; then E=""; else E="-genv LD_PRELOAD $pre"; fi
mpiexec -n 2 $E sh -c 'if [ "$PMI_RANK" = 0 ]; then exec valgrind --tool=callgrind --callgrind-out-file='$out' "$@" 2>/dev/null; else exec "$@"; fi' _ /tmp/small/loop "$@" >/dev/null 2>&1
grep -E "^summary:|^totals:" $out | head -1 | awk '{print $2}'
rm -f $out
