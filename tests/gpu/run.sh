#!/bin/sh
# The device run: ONE call on the device machine (see README, "GPU").
#   here:   tests/gpu/fetch_debs.sh; ./scripts/setup.sh; make -C _build check TESTS=
#   device: run carry=["tests/gpu/debs", "_build"] command="tests/gpu/run.sh"
# Unpacks the carried .debs into tests/gpu/prefix (dpkg -x), puts MPICH and
# UCX on PATH/LD_LIBRARY_PATH, and with the build carried from here runs, in
# order of importance (so that a run cut short still brings the most back):
# the device kernels against the host kernels; the device-buffer tests at
# 2 ranks; the device-buffer benchmark at 2 ranks; the tests at 3 and 4
# ranks; the benchmark at 4 ranks; without CUDA IPC (DPCOLL_IPC=0: the
# staging pipeline's tests and figures); host reductions
# (DPCOLL_DEVICE_REDUCE=0).
# Everything it prints also goes to $OUT/gpu.log (each benchmark to its own
# file too). GPU_RUN_QUICK=1: smaller benchmark (for a rehearsal).
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
lib="$prefix/usr/lib/x86_64-linux-gnu"
export PATH="$prefix/usr/bin:$PATH"
export LD_LIBRARY_PATH="$lib:$prefix/lib/x86_64-linux-gnu:$top/_build/.libs:$top/tests/gpu/debs/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
# UCX looks for its transport modules (cma, ib) where Debian installs them
export UCX_MODULE_DIR="$lib/ucx"
export DPCOLL_CUDA_PLUGIN="$top/_build/.libs/libdpcoll_cuda.so"
export DPCOLL_LOG_LEVEL=2
# MPICH's launcher resolves this host's name; a bare VM may not know it
getent hosts "$(hostname)" >/dev/null 2>&1 || echo "127.0.0.1 $(hostname)" >>/etc/hosts
mpiexec=$(command -v mpiexec.hydra || command -v mpiexec)
t=$top/_build/tests
echo "== machine: $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-?}"), $(nproc) cores, $(uname -r)"
nvidia-smi -L 2>&1 | head -4
nvidia-smi --query-gpu=driver_version,memory.total --format=csv,noheader 2>&1 | head -2
echo "== mpiexec: $mpiexec"
echo "== a UCX with CUDA support on this machine? (libuct_cuda)"
timeout 20 find / -xdev -name 'libuct_cuda*.so*' 2>/dev/null | head -3
for b in "$t/test_gpu_coll" "$t/bench_gpu" "$DPCOLL_CUDA_PLUGIN" "$(command -v mpiexec.hydra)"; do
    ldd "$b" 2>&1 | grep -i "not found" | sed "s|^|missing for $(basename "$b"):|"
done
# a hang ends in a minute with the rank it waited for, not at the call's limit
export DPCOLL_TIMEOUT=60
# one quick launch first: if MPICH cannot start here as it is, try the plain
# local launcher with UCX's shared-memory transports only
if ! LD_PRELOAD="$top/_build/.libs/libdpcoll.so" timeout 60 "$mpiexec" -n 2 "$t/test_mpi_preload" >/dev/null 2>&1; then
    echo "== a 2-rank launch failed as configured; retrying with -launcher fork, UCX_TLS=self,sm"
    export UCX_TLS=self,sm HYDRA_LAUNCHER=fork
    LD_PRELOAD="$top/_build/.libs/libdpcoll.so" timeout 60 "$mpiexec" -n 2 "$t/test_mpi_preload" 2>&1 | tail -20
fi
fail=0
begin=$(date +%s)
budget=${GPU_RUN_BUDGET:-480}
step() {   # step NAME TIMEOUT COMMAND...: runs it, notes a failure
    name=$1 lim=$2
    shift 2
    left=$((budget - ($(date +%s) - begin)))
    if [ $left -lt 20 ]; then
        echo "== $name: not run (the run's ${budget} s are spent)"
        fail=1
        return
    fi
    [ "$lim" -gt $left ] && lim=$left
    echo "== $name"
    s0=$(date +%s)
    timeout "$lim" "$@"; rc=$?
    echo "   ($name: exit $rc, $(( $(date +%s) - s0 )) s)"
    [ $rc = 77 ] && echo "   (skipped: on the device machine that means no usable GPU or driver)"
    [ $rc = 0 ] || fail=1
}
quick=${GPU_RUN_QUICK:-0}
if [ "$quick" = 1 ]; then big=4 reps=3; else big=256 reps=9; fi
step "device reduction kernels against the host kernels" 120 "$t/test_gpu_reduce"
step "device-buffer tests, 2 ranks" 180 bash -o pipefail -c \
    "DPCOLL_STATS=1 '$mpiexec' -n 2 '$t/test_gpu_coll' 2>&1 | tee '$out/test_np2.txt'"
# (the statistics say whether blocking calls went device to device)
echo "   CUDA IPC path taken: $(grep -c 'cuda_ipc [1-9]' "$out/test_np2.txt") collectives of rank 0/1 show it"
grep 'stats: rank 0' "$out/test_np2.txt" | head -8
step "device-buffer benchmark, 2 ranks" 240 bash -o pipefail -c "'$mpiexec' -n 2 '$t/bench_gpu' $big $reps | tee '$out/bench_np2.txt'"
for np in 3 4; do
    step "device-buffer tests, $np ranks" 180 "$mpiexec" -n $np "$t/test_gpu_coll"
done
step "device-buffer benchmark, 4 ranks" 240 bash -o pipefail -c "'$mpiexec' -n 4 '$t/bench_gpu' $big $reps | tee '$out/bench_np4.txt'"
step "device-buffer tests without CUDA IPC (DPCOLL_IPC=0: pipelines, staging), 3 ranks" 180 \
    env DPCOLL_IPC=0 "$mpiexec" -n 3 "$t/test_gpu_coll"
step "the staging pipeline (DPCOLL_IPC=0), 2 ranks" 120 \
    bash -o pipefail -c "DPCOLL_IPC=0 '$mpiexec' -n 2 '$t/bench_gpu' $big $reps | tee '$out/bench_np2_staged.txt'"
step "the staging pipeline with host reductions (DPCOLL_IPC=0 DPCOLL_DEVICE_REDUCE=0), 2 ranks" 120 \
    bash -o pipefail -c "DPCOLL_IPC=0 DPCOLL_DEVICE_REDUCE=0 '$mpiexec' -n 2 '$t/bench_gpu' $big $reps allreduce | tee '$out/bench_np2_hostreduce.txt'"
step "device-buffer tests with host reductions, 2 ranks" 180 \
    env DPCOLL_DEVICE_REDUCE=0 "$mpiexec" -n 2 "$t/test_gpu_coll"
step "MPI integration (host buffers), 2 ranks" 120 "$mpiexec" -n 2 "$t/test_mpi_nbc"
# facts for later changes (a probe: it fails only if it crashes): does a
# host-buffer program get a CUDA context from us, and does the driver's
# pointer query work on a thread without a context
if [ -x "$t/probe_ctx" ]; then
    step "probe: CUDA contexts and pointer queries" 60 bash -o pipefail -c \
        "'$mpiexec' -n 2 '$t/probe_ctx' 2>&1 | tee '$out/probe_ctx.txt'"
fi
if command -v compute-sanitizer >/dev/null 2>&1; then
    step "device reduction kernels under compute-sanitizer (memcheck)" 120 \
        compute-sanitizer --tool memcheck --error-exitcode 9 "$t/test_gpu_reduce"
fi
echo "== gpu run: $([ $fail = 0 ] && echo passed || echo FAILED)"
echo $fail > "$out/status"
}
main 2>&1 | tee "$out/gpu.log"
exit "$(cat "$out/status" 2>/dev/null || echo 1)"
