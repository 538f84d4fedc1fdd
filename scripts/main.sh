#!/bin/sh
# The main job: set up, build, then run libdpcoll's algorithms on simulated
# ranks and show what they do. (Until the MPI shim lands, the simulator is
# the main job: it runs the same algorithm code the library will run.)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh"
sim="$top/_build/tools/dpcoll_sim"
echo
echo "== The ring all-reduce on 4 ranks, step by step =="
"$sim" allreduce ring -p 4 --trace
echo
echo "== Every algorithm on 13 simulated ranks, 1 MiB per rank, 10 us / 10 GB/s links =="
printf '%-22s %-20s %8s %15s %13s %13s\n' collective algorithm result "max bytes/rank" "max msgs/rank" "predicted s"
"$sim" --list | while read -r coll algos; do
    for a in $algos; do
        case $coll in allreduce|bcast) n=131072 ;; *) n=10082 ;; esac
        out=$("$sim" "$coll" "$a" -p 13 -n $n) || true
        res=$(echo "$out" | sed -n 's/^result: //p')
        bytes=$(echo "$out" | sed -n 's/.*busiest rank sent \([0-9]*\) bytes.*/\1/p')
        msgs=$(echo "$out" | sed -n 's/.*most messages from one rank: \([0-9]*\).*/\1/p')
        t=$(echo "$out" | sed -n 's/^predicted time.*: \([^ ]*\) s$/\1/p')
        printf '%-22s %-20s %8s %15s %13s %13s\n' "$coll" "$a" "${res%% *}" "$bytes" "$msgs" "$t"
    done
done
