#!/bin/sh
# rounds out sizes colls libs(names under /tmp/lib_X)
rounds=$1; out=$2; sizes=$3; colls=$4; libs=$5
: > $out
for round in $(seq 1 $rounds); do
  for c in $colls; do for b in $sizes; do for e in $libs; do
    printf "%s r%d " $e $round >> $out
    timeout 120 mpiexec -n 2 -genv LD_PRELOAD /tmp/lib_$e/libdpcoll.so /tmp/held $b $c >> $out 2>&1
  done; done; done
  libs=$(echo $libs | awk '{for(i=NF;i>0;i--) printf "%s ", $i}')
done
