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
# each extra stage that fails (valgrind, a sanitizer, the build without
# CUDA) counts as one failure
stages=$nocuda
for opt in "$@"; do
    case $opt in
    --valgrind)
        make -s check-valgrind >valgrind.out 2>&1 || stages=$((stages + 1))
        tail -n 5 valgrind.out ;;
    --tsan)
        "$top/scripts/sanitize.sh" thread || stages=$((stages + 1)) ;;
    --asan)
        "$top/scripts/sanitize.sh" address || stages=$((stages + 1)) ;;
    *)
        echo "test.sh: unknown option $opt (--valgrind, --tsan, --asan)"
        stages=$((stages + 1)) ;;
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
failed=$((failed + stages))
echo "$passed passed, $failed failed"
[ $rc = 0 ] && [ "$failed" = 0 ]
