#!/bin/sh
# ABBA dpcoll_overlap: args rounds out "colls" "sizes" "kinds" (REPS: repeats per run, default 15)
rounds=$1; out=$2; colls=$3; sizes=$4; kinds=$5
: > $out
for round in $(seq 1 $rounds); do
  order="old new"; [ $((round % 2)) = 0 ] && order="new old"
  for c in $colls; do for s in $sizes; do for k in $kinds; do for e in $order; do
    printf "r%d %s %s %s %s: " $round $e $c $s $k >> $out
    timeout 120 mpiexec -n 2 -genv LD_LIBRARY_PATH $( [ $e = new ] && echo ${NEWLIB:-/tmp/lib_new} || echo /tmp/lib_old ) /work/main/_build/tools/.libs/dpcoll_overlap -c $c -s $s -k $k -n ${REPS:-15} 2>&1 | grep "^libdpcoll" >> $out
  done; done; done; done
done
