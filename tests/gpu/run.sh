#!/bin/sh
# The device run: ONE call on the device machine (see README, "GPU").
#   here:   tests/gpu/fetch_debs.sh; ./scripts/setup.sh; make -C _build check TESTS=
#   device: run carry=["tests/gpu/debs", "_build"] command="tests/gpu/run.sh"
# Unpacks the carried .debs into tests/gpu/prefix (dpkg -x), puts MPICH and
# UCX on PATH/LD_LIBRARY_PATH, and with the build carried from here runs the
# device-buffer tests at 2, 3 and 4 ranks on the GPU and the device-buffer
# benchmark at 2 and 4 ranks. Everything it prints also goes to $OUT/gpu.log.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
out=${OUT:-$top/tests/gpu/out}
mkdir -p "$out"
main() {
prefix="$top/tests/gpu/prefix"
mkdir -p "$prefix"
for d in "$top"/tests/gpu/debs/*.deb; do
    [ -f "$d" ] && dpkg -x "$d" "$prefix"
done
export PATH="$prefix/usr/bin:$PATH"
export LD_LIBRARY_PATH="$prefix/usr/lib/x86_64-linux-gnu:$prefix/lib/x86_64-linux-gnu:$top/_build/.libs:$top/tests/gpu/debs/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export DPCOLL_CUDA_PLUGIN="$top/_build/.libs/libdpcoll_cuda.so"
export DPCOLL_LOG_LEVEL=2
mpiexec=$(command -v mpiexec.hydra || command -v mpiexec)
echo "== machine"; nvidia-smi -L 2>&1 | head -4; nproc
echo "== mpiexec: $mpiexec"
fail=0
for np in 2 3 4; do
    echo "== device-buffer tests, $np ranks"
    timeout 300 "$mpiexec" -n $np "$top/_build/tests/test_gpu_coll"; rc=$?
    [ $rc = 77 ] && echo "(skipped: on the device machine that means no usable GPU or driver)"
    [ $rc = 0 ] || fail=1
done
echo "== MPI integration (host buffers) on this machine, 2 ranks"
timeout 300 "$mpiexec" -n 2 "$top/_build/tests/test_mpi_nbc" || fail=1
for np in 2 4; do
    echo "== device-buffer allreduce benchmark, $np ranks"
    timeout 300 "$mpiexec" -n $np "$top/_build/tests/bench_gpu" 256 9 || fail=1
done
echo "== the same at 2 ranks with the reductions on the host (DPCOLL_DEVICE_REDUCE=0)"
DPCOLL_DEVICE_REDUCE=0 timeout 300 "$mpiexec" -n 2 "$top/_build/tests/bench_gpu" 256 9 || fail=1
echo "== device-buffer tests with host reductions, 2 ranks"
DPCOLL_DEVICE_REDUCE=0 timeout 300 "$mpiexec" -n 2 "$top/_build/tests/test_gpu_coll" || fail=1
echo "== gpu run: $([ $fail = 0 ] && echo passed || echo FAILED)"
echo $fail > "$out/status"
}
main 2>&1 | tee "$out/gpu.log"
exit "$(cat "$out/status" 2>/dev/null || echo 1)"
