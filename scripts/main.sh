#!/bin/sh
# The main job: set up and build, then run a plain MPI program on 2 and on 4
# ranks with libdpcoll preloaded: every collective at sizes from 8 B up,
# timed against the MPI library's own (PMPI_*) and checked equal to it, and
# each rank's account of what ran on libdpcoll (DPCOLL_STATS).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
b="$top/_build"
lib="$b/.libs/libdpcoll.so"
tour="$b/examples/collectives_tour"
echo
echo "== 2 ranks: mpiexec -n 2 env LD_PRELOAD=libdpcoll.so DPCOLL_STATS=1 collectives_tour"
mpiexec -n 2 env LD_PRELOAD="$lib" DPCOLL_STATS=1 "$tour" 16777216 20
echo
echo "== 4 ranks on $(nproc) cores (oversubscribed): MPICH spins while it waits, libdpcoll sleeps"
mpiexec -n 4 env LD_PRELOAD="$lib" "$tour" 1048576 10
echo
echo "== the algorithms, step by step on simulated ranks: dpcoll_sim allreduce ring -p 4 --trace"
"$b/tools/dpcoll_sim" allreduce ring -p 4 --trace | sed -n '1,32p'
