#!/bin/sh
# ABBA rounds of held.c: args rounds out sizes colls
rounds=$1; out=$2; sizes=$3; colls=$4
: > $out
for round in $(seq 1 $rounds); do
  order="old new"; [ $((round % 2)) = 0 ] && order="new old"
  for c in $colls; do for b in $sizes; do for e in $order; do
    printf "%s r%d " $e $round >> $out
    timeout 120 mpiexec -n 2 -genv LD_PRELOAD $( [ $e = new ] && echo ${NEWLIB:-/tmp/lib_new} || echo /tmp/lib_old )/libdpcoll.so /tmp/held $b $c >> $out 2>&1
  done; done; done
done
