#!/bin/bash
# dpcoll_bench -a auto -i 4 -t, 8 KiB-512 KiB, 2 ranks, seven runs each, alternating the library
# before (OLD: a directory with c03e5ba's libdpcoll.so*) and after (NEW) the change; CSVs here
B=${B:-/work/main/_build/tools/.libs/dpcoll_bench}
for r in 1 2 3 4 5 6 7; do for v in old new; do
  d=$OLD; [ $v = new ] && d=$NEW
  mpiexec -n 2 -genv LD_LIBRARY_PATH $d $B -a auto -i 4 -t -b 8K -e 512K -f 2 -q -o waits_${v}_$r.csv
done; done
python3 ab_waits_table.py waits_old_*.csv -- waits_new_*.csv > ab_waits_bench.txt
