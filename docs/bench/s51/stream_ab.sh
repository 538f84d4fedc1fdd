#!/bin/sh
# Streaming stores into the mailboxes (DPCOLL_SHM_STREAM) against ordinary
# copies, ABBA, each pair right after mode_probe (which state the VM is in),
# the mailbox rings forced (allreduce, reduce_scatter_block: 64 KiB segments
# through the mailboxes up to 1 and 4 MiB) and the bcast's scatter-allgather,
# buffers as left and -t in turn. Lines: round touch probe-ratio stream coll:size=us...
B=${BENCH:-_build/tools/dpcoll_bench}
P=${PROBE:-/tmp/mode_probe}
run() {
    (mpiexec -n 2 env DPCOLL_SHM_STREAM=$1 $B -c allreduce,reduce_scatter_block -b 256K -e 2M -f 2 -n 20 -a ring $2
     mpiexec -n 2 env DPCOLL_SHM_STREAM=$1 $B -c bcast -b 32K -e 128K -f 2 -n 40 -a scatter_allgather $2) 2>&1 |
        awk '/^# [a-z_]+$/{c=$2} $3=="float"{printf "%s:%d=%.1f%s ", c, $1, $5, $9 != 0 ? "WRONG" : ""}'
}
for i in $(seq 1 ${ROUNDS:-20}); do
    t=$([ $((i % 2)) = 0 ] && echo -t)
    q=$(mpiexec -n 2 $P | awk '/PROBE/{print $NF}')
    if [ $((i % 4)) -lt 2 ]; then a=0; b=1; else a=1; b=0; fi
    echo "$i ${t:-as_left} $q $a $(run $a "$t")"
    echo "$i ${t:-as_left} $q $b $(run $b "$t")"
done
