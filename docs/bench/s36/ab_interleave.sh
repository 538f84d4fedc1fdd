#!/bin/bash
L=/work/main/_build/.libs
OLD=/tmp/oldsrc/b/tools/.libs/dpcoll_bench
NEW=/work/main/_build/tools/.libs/dpcoll_bench
declare -A ALGOS=([allgather]="ring recursive_doubling bruck direct" [allreduce]="ring recursive_doubling rabenseifner direct" [alltoall]="pairwise bruck direct")
for r in $(seq 1 $1); do
 for c in allgather allreduce alltoall; do
  ARGS="-c $c -b 16K -e 4M -f 2 -t -q"
  mpiexec -n 2 -genv LD_LIBRARY_PATH $L $OLD $ARGS -o old_${c}_$r.csv
  mpiexec -n 2 -genv LD_LIBRARY_PATH $L $NEW $ARGS -o new_${c}_$r.csv
  for a in ${ALGOS[$c]}; do
    mpiexec -n 2 -genv LD_LIBRARY_PATH $L $NEW $ARGS -a $a -o ref_${c}_${a}_$r.csv
  done
 done
done
