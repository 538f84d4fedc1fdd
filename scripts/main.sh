#!/bin/sh
# The main job: set up and build, then train a small MLP data-parallel on 2
# and on 4 ranks with libdpcoll preloaded (examples/dp_train: gradient
# buckets all-reduced with MPI_Iallreduce during the backward pass; checks
# that replicas stay bitwise identical, that the result equals single-process
# training, and that unequal shards need size weighting; step time against
# the MPI library's own all-reduce), then the overlap figure of a 64 MiB
# MPI_Iallreduce, then every collective timed against MPICH's own.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
b="$top/_build"
lib="$b/.libs/libdpcoll.so"
echo
echo "== 2 ranks: mpiexec -n 2 env LD_PRELOAD=libdpcoll.so DPCOLL_STATS=1 dp_train"
mpiexec -n 2 env LD_PRELOAD="$lib" DPCOLL_STATS=1 "$b/examples/dp_train"
echo
echo "== 4 ranks on $(nproc) cores (oversubscribed): mpiexec -n 4 env LD_PRELOAD=libdpcoll.so dp_train"
mpiexec -n 4 env LD_PRELOAD="$lib" "$b/examples/dp_train" -p 10
echo
echo "== overlap: a 64 MiB MPI_Iallreduce with computation in between (dpcoll_overlap)"
mpiexec -n 2 "$b/tools/dpcoll_overlap" -k sleep
mpiexec -n 2 "$b/tools/dpcoll_overlap" -k cpu
echo
echo "== every collective from 8 B up, against MPICH's own: mpiexec -n 2 env LD_PRELOAD=libdpcoll.so collectives_tour"
mpiexec -n 2 env LD_PRELOAD="$lib" "$b/examples/collectives_tour" 16777216 20
