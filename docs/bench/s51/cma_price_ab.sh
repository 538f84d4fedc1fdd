#!/bin/sh
# A/B of the job's price of cross-memory copies (session 51): the same build
# with DPCOLL_CMA_PROBE=0 (priced as fitted: the choices before) and =1,
# alternating in ABBA rounds, on the calls whose choice the price moved
# here (allreduce 256 KiB-1 MiB, reduce_scatter_block 4 MiB) and their
# neighbours; with and without -t. Prints one line per run and size:
#   round touch probe collective bytes algorithm time_us native_us
# Use: sh docs/bench/s51/cma_price_ab.sh > out.txt (ROUNDS, default 8)
B=${BENCH:-_build/tools/dpcoll_bench}
ROUNDS=${ROUNDS:-8}
run() {   # round touch probe
    for c in "allreduce -b 256K -e 2M -n 40" "reduce_scatter_block -b 2M -e 8M -n 40"; do
        mpiexec -n 2 env DPCOLL_CMA_PROBE=$3 $B -c $c -f 2 -a auto $2 2>&1 |
            awk -v r=$1 -v t="${2:-none}" -v p=$3 '/^# [a-z_]+$/{c=$2} $3=="float"{print r, t, p, c, $1, $4, $5, $10}'
    done
}
i=1
while [ $i -le $ROUNDS ]; do
    for t in "" -t; do
        if [ $((i % 2)) = 1 ]; then run $i "$t" 0; run $i "$t" 1; else run $i "$t" 1; run $i "$t" 0; fi
    done
    i=$((i + 1))
done
