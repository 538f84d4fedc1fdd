#!/bin/sh
out=$1; rounds=$2; shift 2
mkdir -p $out
B=/work/main/_build/tools/.libs/dpcoll_bench
for round in $(seq 1 $rounds); do
  order="0 1"; [ $((round % 2)) = 0 ] && order="1 0"
  for e in $order; do
    L=/tmp/lib_old; [ $e = 1 ] && L=${NEWLIB:-/tmp/lib_new}
    timeout 600 mpiexec -n 4 -genv LD_LIBRARY_PATH $L $B "$@" -q -o $out/r${round}_e$e.csv >/dev/null 2>&1
  done
done
