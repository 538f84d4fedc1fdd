#!/bin/bash
B=/work/main/_build/tools/.libs/dpcoll_bench
for r in 1 2 3; do for v in old new; do
  mpiexec -n 2 -genv LD_LIBRARY_PATH /tmp/${v}lib $B -a auto -i 4 -t -b 8K -e 128K -f 2 -q -o leave_${v}_$r.csv
done; done
