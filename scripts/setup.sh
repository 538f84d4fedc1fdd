#!/bin/sh
# Installs what libdpcoll needs on Debian 12 (as root), then configures and
# builds it in ./_build. Safe to run again: it only does what is missing.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
pkgs="build-essential mpich libmpich-dev libucx-dev ucx-utils check autoconf automake libtool pkg-config valgrind gnuplot-nox"
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "setup: missing Debian packages:$missing; run as root (or: sudo apt-get install$missing)" >&2
        exit 1
    fi
    echo "setup: installing$missing"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi
cd "$top"
[ -x configure ] && [ configure -nt configure.ac ] || autoreconf -fi >/dev/null 2>&1
mkdir -p _build
cd _build
[ -f Makefile ] || ../configure -q
make -j"$(nproc)" -s >/dev/null
echo "setup: built in $top/_build"
