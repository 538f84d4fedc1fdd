#!/bin/sh
# Set up, build, and run the whole test suite (make check); prints a closing
# line "N passed, N failed" counting every Check test of every program.
# With --valgrind it also runs the suite under valgrind (make check-valgrind),
# with --tsan the threaded tests under ThreadSanitizer, with --asan the unit
# and MPI tests under AddressSanitizer and its leak checker
# (scripts/sanitize.sh thread / address).
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/scripts/setup.sh" || exit 1
cd "$top/_build"
make -s check >check.out 2>&1
rc=$?
grep -E '^(PASS|FAIL|ERROR|XFAIL|XPASS|SKIP):' check.out
grep -h -E '^[0-9]+%: Checks|^matrix:|^np=[0-9]' tests/*.log tests/mpi/*.log
if [ $rc != 0 ]; then
    tail -n 40 check.out
    grep -h -E ':[FE]:|^FAILED' tests/*.log tests/mpi/*.log | head -n 40
fi
# With the CUDA toolkit found, the build above includes the CUDA plugin; the
# build without it must work too (CI builds both ways).
nocuda=0
if grep -q 'define DPC_HAVE_CUDA 1' config.h; then
    mkdir -p "$top/_build_nocuda"
    if (cd "$top/_build_nocuda" && { [ -f Makefile ] || ../configure -q --without-cuda; } &&
        make -s -j"$(nproc)" >/dev/null && make -s check TESTS=tests/test_sched >/dev/null 2>&1); then
        echo "build without CUDA (--without-cuda): ok"
    else
        echo "build without CUDA (--without-cuda): FAILED"
        nocuda=1
    fi
fi
vrc=0
trc=0
arc=0
for opt in "$@"; do
    case $opt in
    --valgrind)
        make -s check-valgrind >valgrind.out 2>&1
        vrc=$?
        tail -n 5 valgrind.out ;;
    --tsan)
        "$top/scripts/sanitize.sh" thread
        trc=$? ;;
    --asan)
        "$top/scripts/sanitize.sh" address
        arc=$? ;;
    *)
        echo "test.sh: unknown option $opt (--valgrind, --tsan, --asan)"
        trc=1 ;;
    esac
done
# Check's per-program summaries: "NN%: Checks: N, Failures: F, Errors: E"
sum=$(cat tests/*.log tests/mpi/*.log | awk '/^[0-9]+%: Checks:/ { gsub(",", ""); n += $3; f += $5 + $7 }
                             END { printf "%d %d", n - f, f }')
passed=${sum% *}
failed=${sum#* }
# a program that crashed before Check could count counts as a failure too
progs=$(grep -c -E '^(FAIL|ERROR):' check.out)
[ "$failed" -ge "$progs" ] || failed=$progs
[ $vrc = 0 ] || failed=$((failed + 1))
[ $trc = 0 ] || failed=$((failed + 1))
[ $arc = 0 ] || failed=$((failed + 1))
failed=$((failed + nocuda))
echo "$passed passed, $failed failed"
[ $rc = 0 ] && [ $vrc = 0 ] && [ $trc = 0 ] && [ $arc = 0 ] && [ $nocuda = 0 ] && [ "$failed" = 0 ]
