#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# GPU tests and the GPU benchmark, on a machine with a CUDA GPU, nvcc, meson and ninja but
# nothing installable (the device tool's machines: /work/.library/device/README.md).
#
#   util/gpu-tests.sh --pack    here (Debian 12, apt): unpack Debian's libfabric and what it
#                               needs (dpkg -x) into .gpu-deps/, which git ignores; carry it
#   util/gpu-tests.sh           there: build into build-gpu/ against .gpu-deps/, then run the
#                               device-memory tests against the real driver (ft_hmem: every byte
#                               of every layout, device->device, device->host, host->device;
#                               test_hmem_cuda, test_ipc) and the GPU benchmarks (gpu_share:
#                               two processes sharing the GPU; nc_gpu_bw).  Logs go to
#                               $OUT when set (the device tool brings them back), else build-gpu/.
#   util/gpu-tests.sh --bench [nc_gpu_bw ARGS]
#                               there: build, then only the benchmark (e.g. -i 1000 MILC);
#                               GPU_LOG=NAME: the log is $OUT/NAME.log
# One line from this machine, with the device tool:
#   run(command="util/gpu-tests.sh", carry=[".gpu-deps"])
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.gpu-deps
pkgs="libfabric1 libfabric-dev libfabric-bin ibverbs-providers libibverbs1 librdmacm1 libpsm-infinipath1
      libpsm2-2 libnl-3-200 libnl-route-3-200 libnuma1 libatomic1 pkgconf pkgconf-bin
      libpkgconf3"

if [ "${1:-}" = "--pack" ]; then
	rm -rf "$deps" && mkdir -p "$deps/debs" "$deps/root" || exit 1
	(cd "$deps/debs" && apt-get download $pkgs) || exit 1
	for d in "$deps"/debs/*.deb; do dpkg -x "$d" "$deps/root" || exit 1; done
	rm -rf "$deps/debs"
	# Debian reaches libpsm_infinipath.so.1 through an alternatives link: make it here
	ln -sf ../libpsm1/libpsm_infinipath.so.1.16 \
		"$deps/root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/libpsm_infinipath.so.1"
	# pkg-config files name /usr: point them at the unpacked tree
	for pc in "$deps"/root/usr/lib/*/pkgconfig/*.pc; do
		sed -i "s|^prefix=.*|prefix=$deps/root/usr|; s|^libdir=/usr|libdir=\${prefix}|; s|^includedir=/usr|includedir=\${prefix}|" "$pc"
	done
	du -sh "$deps"
	exit 0
fi

bench_only=
if [ "${1:-}" = "--bench" ]; then
	shift
	bench_only=1
fi
[ -d "$deps/root" ] || { echo "no $deps: run util/gpu-tests.sh --pack first (and carry it)"; exit 1; }
out=${OUT:-$root/build-gpu}
mkdir -p "$out"
log=$out/${GPU_LOG:-gpu-tests}.log
multiarch=$(ls "$deps/root/usr/lib" | grep -- '-linux-gnu$' | head -1)
lib=$deps/root/usr/lib/$multiarch
# The pkg-config files were rewritten for the folder they were unpacked in: follow it here.
for pc in "$lib"/pkgconfig/*.pc; do
	sed -i "s|^prefix=.*|prefix=$deps/root/usr|" "$pc"
done
export LD_LIBRARY_PATH=$lib:$deps/root/lib/$multiarch${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PKG_CONFIG_PATH=$lib/pkgconfig
command -v pkg-config >/dev/null || export PKG_CONFIG=$deps/root/usr/bin/pkgconf
export PATH=$PATH:/usr/local/cuda/bin
# Every step has its own time limit: the device time of a session is short, and one hung test
# must not take the rest of it.
t() { local lim=$1; shift; local s=$SECONDS; timeout -k 5 "$lim" "$@"; local rc=$?
	echo "== $*: exit $rc ($((SECONDS - s)) s)"; }
{
	date -u; uname -r; nvidia-smi -L; nvcc --version | tail -1; ldd "$lib/libfabric.so.1" | grep "not found"
	cd "$root" && rm -rf build-gpu && meson setup build-gpu -Dverbs=disabled \
		-Dcuda=enabled -Dfault_injection=false -Dwerror=false >/dev/null && { ninja -C build-gpu >build-gpu/ninja.log 2>&1 || { grep -v "^\[" build-gpu/ninja.log | head -60; exit 1; }; }
	echo "built in $SECONDS s"
	export FI_PROVIDER_PATH=$root/build-gpu/prov/ddtx FI_LOG_LEVEL=${FI_LOG_LEVEL:-warn} FI_LOG_PROV=ddtx
	fi_info=$(ls "$deps"/root/usr/bin/fi_info 2>/dev/null)
	# fi_info's answer with FI_HMEM asked for (the whole of it in $OUT/fi_info.txt; libfabric's
	# own hmem lines left out here: Debian's libfabric is built without CUDA)
	FI_LOG_LEVEL=info ${fi_info:-true} -p ddtx -c FI_HMEM -v >"$out/fi_info.txt" 2>&1
	grep -E "ddtx_caps|firmware: FI_HMEM" "$out/fi_info.txt" | head -2
	if [ -n "$bench_only" ]; then
		t 300 build-gpu/tests/fabtests/benchmarks/nc_gpu_bw "$@"
		echo "all in $SECONDS s"
		exit
	fi
	f=build-gpu/tests/fabtests/functional
	t 60 $f/ft_msg send_recv        # the shm wire without a GPU: is this machine's kernel able?
	t 60 build-gpu/tests/fabtests/unit/test_hmem_cuda
	t 60 build-gpu/tests/fabtests/unit/test_ipc process
	for x in offer errors cancel semantics d2d d2h h2d host_queries ipc_decline ipc_freed; do
		t 90 $f/ft_hmem "$x"
	done
	for x in d2d d2h; do t 90 $f/ft_hmem FI_DDTX_HMEM_IPC=0 "$x"; done
	for x in d2d d2h; do t 90 $f/ft_hmem FI_DDTX_HMEM_COPY=kernel "$x"; done
	t 60 build-gpu/tests/fabtests/benchmarks/gpu_share
	# 1000 transfers a row (the forced driver copy per segment: 100): the learned way's
	# explorations and the first transfers weigh little in the mean, as in an application
	t 240 build-gpu/tests/fabtests/benchmarks/nc_gpu_bw -i 1000
	echo "all in $SECONDS s"
	# libfabric 1.17 logs every provider that declines a named provider's query at warn level
	# (rxm and rxd asking for ddtx as their core): not ddtx's news, left out of the log.
} 2>&1 | grep --line-buffered -v "fi_getinfo: provider .* returned -61" | tee "$log"
