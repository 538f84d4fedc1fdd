#!/bin/sh
# The tests that run libdpcoll from several threads at once (the progress
# thread under nonblocking and persistent calls, MPI_THREAD_MULTIPLE with
# two communicators, device buffers on the fake device) under
# ThreadSanitizer and UndefinedBehaviorSanitizer: a build of its own in
# ./_build_tsan (-fsanitize=thread,undefined, without CUDA). Any report
# fails. Prints "tsan: all clean" or what failed.
# Called by scripts/test.sh --tsan after setup.sh has built ./_build.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$top/_build_tsan"
cd "$top/_build_tsan" || exit 1
# (undefined behaviour is checked too, at no extra run: it aborts the test)
san="-fsanitize=thread,undefined -fno-sanitize-recover=undefined"
if ! { [ -f Makefile ] || ../configure -q --without-cuda CFLAGS="-O1 -g $san" LDFLAGS="$san"; } ||
   ! make -s -j"$(nproc)" >build.out 2>&1 || ! make -s -j"$(nproc)" check TESTS= >>build.out 2>&1; then
    tail -n 20 build.out 2>/dev/null
    echo "tsan: the build with $san FAILED"
    exit 1
fi
# UCX's memory hooks (libucm) call into ThreadSanitizer from a thread that
# is being torn down, which crashes it: our code needs none of them.
export UCX_MEM_EVENTS=no
# exitcode 66 on any report; the suppressions are UCX's own (see the file)
export TSAN_OPTIONS="suppressions=$top/tests/mpi/tsan.supp exitcode=66 report_signal_unsafe=0"
export CK_FORK=no DPCOLL_TIMEOUT=60
fail=0
run() {
    what=$1; shift
    out=$(timeout 600 "$@" 2>&1); rc=$?
    n=$(echo "$out" | grep -c -E 'WARNING: ThreadSanitizer|runtime error:')
    if [ $rc = 0 ] && [ "$n" = 0 ]; then
        echo "tsan: $what: clean"
    else
        echo "tsan: $what: FAILED (exit $rc, $n reports)"
        echo "$out" | grep -A 12 -E 'WARNING: ThreadSanitizer|runtime error:' | head -n 60
        fail=1
    fi
}
mpi=${MPIEXEC:-mpiexec}
for np in 2 3; do
    run "nonblocking and persistent calls with the progress thread, $np ranks" \
        $mpi -n $np tests/test_mpi_nbc
    run "MPI_THREAD_MULTIPLE, two threads on two communicators, $np ranks" \
        $mpi -n $np tests/test_mpi_misc threads
done
run "nonblocking collectives, every algorithm, 2 ranks" \
    env DPC_TEST_QUICK=1 DPC_TEST_MODE=nonblocking $mpi -n 2 tests/test_mpi_coll
run "device buffers on the fake device, 2 ranks" \
    env DPCOLL_CUDA_PLUGIN="$PWD/tests/.libs/libfakedev.so" $mpi -n 2 tests/test_fakedev_coll
run "randomized cases on the fake device (nonblocking ones in flight together), 3 ranks" \
    env DPC_FUZZ_CASES=150 DPCOLL_CUDA_PLUGIN="$PWD/tests/.libs/libfakedev.so" \
    $mpi -n 3 tests/test_fakedev_fuzz
[ $fail = 0 ] && echo "tsan: all clean"
exit $fail
