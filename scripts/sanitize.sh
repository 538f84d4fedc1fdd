#!/bin/sh
# The test programs under a sanitizer, each in a build of its own without
# CUDA (undefined behaviour is checked too, at no extra run: it aborts the
# test). Any report fails. Prints "<name>: all clean" or what failed.
#
#   sanitize.sh thread    ThreadSanitizer (./_build_tsan): the tests that run
#                         libdpcoll from several threads at once (the progress
#                         thread under nonblocking and persistent calls,
#                         MPI_THREAD_MULTIPLE on two communicators, device
#                         buffers on the fake device)
#   sanitize.sh address   AddressSanitizer with its leak checker
#                         (./_build_asan): the unit tests and the MPI tests
#                         (every collective, form and algorithm, the fuzzers,
#                         bad input, dup/free cycles, the fake device): an
#                         out-of-bounds access to the heap, the stack or a
#                         global, a use after free, or a block left
#                         unfreed at exit
#
# Called by scripts/test.sh --tsan / --asan after setup.sh has built ./_build.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
thread)
    name=tsan
    san="-fsanitize=thread,undefined -fno-sanitize-recover=undefined"
    # UCX's memory hooks (libucm) call into ThreadSanitizer from a thread
    # that is being torn down, which crashes it: our code needs none of them.
    export UCX_MEM_EVENTS=no
    # exitcode 66 on any report; the suppressions are UCX's own (see the file)
    export TSAN_OPTIONS="suppressions=$top/tests/mpi/tsan.supp exitcode=66 report_signal_unsafe=0"
    reports='WARNING: ThreadSanitizer|runtime error:' ;;
address)
    name=asan
    san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
    export ASAN_OPTIONS="detect_leaks=1 halt_on_error=1 exitcode=66"
    reports='ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:' ;;
*)
    echo "usage: sanitize.sh thread|address" >&2
    exit 2 ;;
esac
mkdir -p "$top/_build_$name"
cd "$top/_build_$name" || exit 1
if ! { [ -f Makefile ] || ../configure -q --without-cuda CFLAGS="-O1 -g $san" LDFLAGS="$san"; } ||
   ! make -s -j"$(nproc)" >build.out 2>&1 || ! make -s -j"$(nproc)" check TESTS= >>build.out 2>&1; then
    tail -n 20 build.out 2>/dev/null
    echo "$name: the build with $san FAILED"
    exit 1
fi
export CK_FORK=no DPCOLL_TIMEOUT=60
fail=0
run() {
    what=$1; shift
    out=$(timeout 600 "$@" 2>&1); rc=$?
    n=$(echo "$out" | grep -c -E "$reports")
    if [ $rc = 0 ] && [ "$n" = 0 ]; then
        echo "$name: $what: clean"
    else
        echo "$name: $what: FAILED (exit $rc, $n reports)"
        echo "$out" | grep -A 12 -E "$reports" | head -n 60
        [ "$n" = 0 ] && echo "$out" | tail -n 20
        fail=1
    fi
}
mpi=${MPIEXEC:-mpiexec}
fake="DPCOLL_CUDA_PLUGIN=$PWD/tests/.libs/libfakedev.so"
if [ $name = tsan ]; then
    for np in 2 3; do
        run "nonblocking and persistent calls with the progress thread, $np ranks" \
            $mpi -n $np tests/test_mpi_nbc
        run "MPI_THREAD_MULTIPLE, two threads on two communicators, $np ranks" \
            $mpi -n $np tests/test_mpi_misc threads
    done
    run "batches of small nonblocking and persistent calls, 2 ranks" \
        $mpi -n 2 tests/test_mpi_misc batch
    run "the MPI library's operations in flight across ours, waits that sleep, 2 ranks" \
        $mpi -n 2 tests/test_mpi_misc mpiprogress
    run "nonblocking collectives, every algorithm, 2 ranks" \
        env DPC_TEST_QUICK=1 DPC_TEST_MODE=nonblocking $mpi -n 2 tests/test_mpi_coll
    run "... on two nodes (DPCOLL_TEST_NODES=2: every message by UCX), 2 ranks" \
        env DPCOLL_TEST_NODES=2 DPC_TEST_QUICK=1 DPC_TEST_MODE=nonblocking $mpi -n 2 tests/test_mpi_coll
    run "device buffers on the fake device, 2 ranks" env "$fake" $mpi -n 2 tests/test_fakedev_coll
    run "randomized cases on the fake device (nonblocking ones in flight together), 3 ranks" \
        env DPC_FUZZ_CASES=150 "$fake" $mpi -n 3 tests/test_fakedev_fuzz
else
    # every unit test but test_scale (its thousands of simulated ranks take
    # minutes here and exercise the same algorithm code as test_matrix)
    for t in reduce sched sim cost pipeline shm mailbox config reqmap; do
        run "unit test test_$t" tests/test_$t
    done
    run "unit test test_matrix (DPC_TEST_QUICK: 10 group sizes)" env DPC_TEST_QUICK=1 tests/test_matrix
    for np in 2 3; do
        run "every collective and algorithm, blocking, $np ranks" $mpi -n $np tests/test_mpi_coll
    done
    run "... nonblocking, 3 ranks" env DPC_TEST_MODE=nonblocking $mpi -n 3 tests/test_mpi_coll
    run "... persistent, 2 ranks" env DPC_TEST_MODE=persistent $mpi -n 2 tests/test_mpi_coll
    for np in 1 2 3 4; do
        run "randomized cases, $np ranks" $mpi -n $np tests/test_mpi_fuzz
    done
    run "randomized cases on two nodes dealt round-robin (DPCOLL_TEST_NODES=2:cyclic), 4 ranks" \
        env DPCOLL_TEST_NODES=2:cyclic $mpi -n 4 tests/test_mpi_fuzz
    run "nonblocking and persistent calls with the progress thread, 2 ranks" \
        $mpi -n 2 tests/test_mpi_nbc
    for m in errors repeat threads largecount predict average idup mpiprogress; do
        run "test_mpi_misc $m, 3 ranks" $mpi -n 3 tests/test_mpi_misc $m
    done
    # (ASan holds freed blocks back to catch a use after free, which the
    # test's bound on resident memory would take for a leak: off for it)
    run "1000 dup/allreduce/free cycles, resident memory flat, 2 ranks" \
        env ASAN_OPTIONS="$ASAN_OPTIONS quarantine_size_mb=0" $mpi -n 2 tests/test_mpi_misc cycles
    run "device buffers on the fake device, 2 ranks" env "$fake" $mpi -n 2 tests/test_fakedev_coll
    run "... requests (CUDA IPC, holes, backoff), 2 ranks" \
        env "$fake" $mpi -n 2 tests/test_fakedev_coll requests
    run "... on two fake GPUs with peer access, 3 ranks" \
        env DPCOLL_FAKE_GPUS=2 DPCOLL_FAKE_P2P=1 "$fake" $mpi -n 3 tests/test_fakedev_coll
    run "randomized cases on the fake device, 3 ranks" env "$fake" $mpi -n 3 tests/test_fakedev_fuzz
fi
# the mpi_f08 program (built where configure found an MPI Fortran
# compiler): libdpcoll started and stopped by its Fortran init and finalize
if [ -x tests/fortran_f08 ]; then
    run "a Fortran program (use mpi_f08, linked), 2 ranks" $mpi -n 2 tests/fortran_f08
fi
[ $fail = 0 ] && echo "$name: all clean"
exit $fail
