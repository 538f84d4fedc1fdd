#!/bin/sh
# Session 51: this VM flips between two modes every ten seconds to a minute
# (its two vCPUs sharing a cache or not, by all signs): in one, records
# through the shared-memory mailboxes cross between the ranks' cores at
# 90-140 us/MiB each way; in the other at 240-350. Each round runs
# mode_probe.c (a bidirectional mailbox-like exchange of 1 MiB, and
# process_vm_readv of 1 MiB both ways) and right after it dpcoll_bench with
# the algorithms whose ranking the mode decides, with -t and without in
# turn. Output lines: time, the probe, then collective+size_algorithm=us.
#   mpicc -O2 -o /tmp/mode_probe docs/bench/s51/mode_probe.c -lrt
#   N=40 sh docs/bench/s51/modes.sh > modes.txt; python3 docs/bench/s51/modes_sum.py modes.txt
B=${BENCH:-_build/tools/dpcoll_bench}
P=${PROBE:-/tmp/mode_probe}
for i in $(seq 1 ${N:-40}); do
  t=$([ $((i % 2)) = 0 ] && echo -t)
  p=$(mpiexec -n 2 $P | grep PROBE)
  b=$( (mpiexec -n 2 $B -c allreduce -b 256K -e 4M -f 2 -n 20 -a ring,direct,rabenseifner $t
        mpiexec -n 2 $B -c reduce_scatter_block -b 256K -e 4M -f 2 -n 20 -a ring,direct,recursive_halving $t
        mpiexec -n 2 $B -c bcast -b 16K -e 1M -f 2 -n 20 -a binomial,direct,scatter_allgather $t
        mpiexec -n 2 $B -c alltoall -b 64K -e 4M -f 2 -n 20 -a pairwise,direct $t
        mpiexec -n 2 $B -c allgather -b 256K -e 4M -f 2 -n 20 -a ring,direct $t) 2>&1 |
      awk '/^# [a-z_]+$/{c=$2} $3=="float"{printf "%s:%d:%s=%.1f ", c, $1, $4, $5}')
  echo "$(date +%T) ${t:-as_left} $p | $b"
  sleep ${SLEEP:-5}
done
