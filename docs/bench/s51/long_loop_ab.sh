#!/bin/sh
# long_loop.c under several settings in rotation (ROUNDS rounds of SECONDS_EACH-second
# runs): the model alone; DPCOLL_AUTOTUNE=3 decided once (PERIOD=0); measured again
# every 2 s (the default), 5 s and 1 s. SETTINGS picks some. One line per run: round
# setting, then long_loop's. First run (long_loop_ab.txt): model once period5 period1.
L=${LOOP:-/tmp/long_loop}
lib=${LIB:-$PWD/_build/.libs/libdpcoll.so}
for r in $(seq 1 ${ROUNDS:-4}); do
  for s in ${SETTINGS:-model once period2 period5 period1}; do
    case $s in
      model) e="DPCOLL_AUTOTUNE=0";;
      once) e="DPCOLL_AUTOTUNE=3 DPCOLL_AUTOTUNE_PERIOD=0";;
      period2) e="DPCOLL_AUTOTUNE=3";;
      period5) e="DPCOLL_AUTOTUNE=3 DPCOLL_AUTOTUNE_PERIOD=5";;
      period1) e="DPCOLL_AUTOTUNE=3 DPCOLL_AUTOTUNE_PERIOD=1";;
    esac
    echo "$r $s $(mpiexec -n 2 env LD_PRELOAD=$lib $e $L ${SECONDS_EACH:-20} 2>&1 | grep allreduce)"
  done
done
