#!/bin/sh
# Session 51, the first look (modes_0.txt): every ~15 s the state probe (mode_probe.c), then ring vs direct (allreduce) and ring vs rh vs direct (rs) in one run
cd /work/main
for i in $(seq 1 ${N:-30}); do
  p=$(mpiexec -n 2 ${PROBE:-/tmp/mode_probe} | grep PROBE)
  b=$(mpiexec -n 2 env DPCOLL_CMA_PROBE=0 _build/tools/dpcoll_bench -c allreduce,reduce_scatter_block -b 512K -e 2M -f 2 -n 30 -a ring,direct,recursive_halving 2>&1 | awk '/^# [a-z_]+$/{c=substr($2,1,2)} $3=="float"{printf "%s%dK_%s=%.0f ", c, $1/1024, $4, $5}')
  echo "$(date +%T) $p | $b"
  sleep ${SLEEP:-15}
done
