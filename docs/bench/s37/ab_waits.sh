#!/bin/bash
# ab.sh ROUNDS ARGS...: alternate old/new/native/nothread on ifar
R=$1; shift
for i in $(seq $R); do
  o=$(mpiexec -n 2 -env LD_PRELOAD $OLD/libdpcoll.so ./in_flight_allreduce "$@" 2>&1 | grep -o "median [0-9.]*" | cut -d' ' -f2)
  n=$(mpiexec -n 2 -env LD_PRELOAD $NEW/libdpcoll.so ./in_flight_allreduce "$@" 2>&1 | grep -o "median [0-9.]*" | cut -d' ' -f2)
  m=$(mpiexec -n 2 ./in_flight_allreduce "$@" 2>&1 | grep -o "median [0-9.]*" | cut -d' ' -f2)
  z=$(DPCOLL_PROGRESS_THREAD=0 mpiexec -n 2 -env LD_PRELOAD $NEW/libdpcoll.so ./in_flight_allreduce "$@" 2>&1 | grep -o "median [0-9.]*" | cut -d' ' -f2)
  echo "old $o new $n mpich $m nothread $z"
done
