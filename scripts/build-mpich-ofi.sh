#!/bin/bash
# Build MPICH with the ch4:ofi device against Debian's libfabric, from
# Debian's own source package, so that MPICH can run over the libfabric
# provider mrail (docs/provider.md). Debian's packaged MPICH is ch4:ucx and
# cannot load libfabric providers. Outside CI: about an hour on 2 cores
# (the dataloop datatype engine: yaksa's generated sources would double it).
#
#   scripts/build-mpich-ofi.sh [PREFIX]      (default /opt/mpich-ofi; root)
#
# Then: PREFIX/bin/mpicc app.c -o app
#       FI_PROVIDER=mrail FI_PROVIDER_PATH=<LIBDIR>/libfabric \
#           PREFIX/bin/mpiexec -n 4 ./app
set -euo pipefail
PREFIX=${1:-/opt/mpich-ofi}
WORK=${MPICH_BUILD_DIR:-/var/tmp/mpich-ofi-build}
[ "$(id -u)" -eq 0 ] || { echo "needs root (apt-get)"; exit 1; }

# Source packages need a deb-src entry; Debian's images ship none.
SRC=/etc/apt/sources.list.d/mrail-deb-src.sources
if ! grep -rqs '^Types:.*deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d/; then
	codename=$(. /etc/os-release && echo "$VERSION_CODENAME")
	cat >"$SRC" <<EOT
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOT
	apt-get update
fi
apt-get install -y dpkg-dev build-essential gfortran libfabric-dev \
	libhwloc-dev pkg-config

mkdir -p "$WORK"
cd "$WORK"
[ -d mpich-*/ ] 2>/dev/null || apt-get source mpich
cd "$(ls -d mpich-*/ | head -1)"
./configure --prefix="$PREFIX" --with-device=ch4:ofi --with-libfabric=/usr \
	--with-hwloc=/usr --disable-fortran --enable-fast=O2 \
	--with-datatype-engine=dataloop \
	>"$WORK/configure.log" 2>&1 || { tail -40 "$WORK/configure.log"; exit 1; }
# Debian's libfabric.pc lists its providers' libraries as Libs.private
# (psm, psm2, rdmacm, verbs, efa); MPICH's configure copies them into its
# link line and wrappers, and without rdma-core and the psm packages the
# link fails ("cannot find -lpsm_infinipath"). libfabric.so already links
# them itself, so they are dropped.
for f in Makefile src/env/mpicc* src/env/mpicxx* src/env/mpifort*; do
	[ -f "$f" ] && sed -i 's/ -lpsm_infinipath -lpsm2 -lrdmacm -libverbs -lefa//g' "$f"
done
make -j"$(nproc)" >"$WORK/make.log" 2>&1 || { tail -60 "$WORK/make.log"; exit 1; }
make install >"$WORK/install.log" 2>&1
"$PREFIX/bin/mpichversion" | grep -i device
echo "MPICH ch4:ofi installed in $PREFIX"
