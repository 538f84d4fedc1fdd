#!/bin/sh
# Run HERE (a Debian 12 machine with the archive): downloads the Debian
# packages the device machine needs to run MPICH, UCX and the tests (it has
# no package registry) into tests/gpu/debs/ (ignored by git), for `run`'s
# carry. Then build the CUDA tree here: ./scripts/setup.sh && make -C _build
# check TESTS= (builds tests/test_gpu_coll and tests/bench_gpu).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$here/debs"
cd "$here/debs"
pkgs="mpich libmpich12 libucx0 libhwloc15 libnuma1 libibverbs1 librdmacm1 libgfortran5
      libsubunit0 libslurm38 hwloc-nox ibverbs-providers libudev1"
apt-get download $pkgs
# the CUDA runtime the build links (the device machine may have only the driver)
mkdir -p lib
cp -a /usr/local/cuda/lib64/libcudart.so* lib/
ls -la "$here/debs"
du -sh "$here/debs"
