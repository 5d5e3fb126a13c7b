#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# MPI-level noncontiguous benchmarks over several MPI stacks, side by side, in one invocation:
#
#   util/mpi-bench.sh [--quick] [--plot] [--cases PATTERNS] [--vec B:C[:S],...]
#                     [--stacks S1,S2,...] [--repeat N] [--batches N] [--stat min|median]
#                     [--out DIR] [--report-only] [--hosts]
#
# Stacks (default all; each runs tests/mpi/bench/mpi_nc_bench with 2 ranks bound to cores):
#   mpich-ddtx   MPICH 4.0.2 ch4:ofi, yaksa engine (util/build-mpich.sh) with FI_PROVIDER=ddtx
#   mpich-iov-ddtx  the yaksa build with a raised iov cap (util/build-mpich.sh --iov-max N;
#                the newest /opt/ddtx-mpich-yaksa-iov*, or DDTX_MPICH_IOV_PREFIX) over ddtx
#   mpich-lay-ddtx  the yaksa build whose derived datatypes go to ddtx
#                as layout handles (util/build-mpich.sh --ddtx-layouts, or DDTX_MPICH_LAYOUTS_PREFIX)
#   mpich-dl-ddtx   the dataloop build (util/build-mpich.sh --dataloop, or
#                DDTX_MPICH_DATALOOP_PREFIX) over ddtx
#   mpich-shm    the yaksa MPICH with libfabric's shm provider
#   mpich-tcp    the yaksa MPICH with libfabric's tcp provider (tcp;ofi_rxm, loopback)
#   ompi-sm      Debian's Open MPI 4.1, default path on one host (pml ob1, btl vader)
#   deb-mpich    Debian's MPICH 4.0 (ch4:ucx; on one host its own shared-memory module)
# The variant builds are not built here (each takes 10+ minutes): a stack whose build is missing
# is left out with a note.  The MPICH stacks run with MPIR_CVAR_NOLOCAL=1 so that on one host the traffic goes through the
# libfabric provider rather than MPICH's shared-memory module.
#
# --hosts: the same cases between two "hosts" of util/hosts.sh (network namespaces joined by a
# veth pair; root, else exit 77), rank 0 on host A and rank 1 on host B, each bound to its own
# core (tests/mpi/hosts/on-core.sh), Hydra and mpirun reaching host B through
# tests/mpi/hosts/launch.sh.  Stacks (default all):
#   mpich-ddtx-tcp  the yaksa MPICH over ddtx's ofi wire on libfabric's tcp core
#                (FI_PROVIDER=ddtx,tcp FI_DDTX_WIRE=ofi FI_DDTX_OFI_PROVIDER=tcp)
#   mpich-ddtx-rxm  the same over tcp;ofi_rxm as the core
#   mpich-ddtx-net  the same over the "net" core
#   mpich-ddtx-msg  the same over tcp's FI_EP_MSG, ddtx connecting (FI_DDTX_OFI_EP_TYPE=msg);
#                mpich-lay-ddtx-msg likewise with the --ddtx-layouts build (neither by default)
#   mpich-iov-ddtx-tcp  the --iov-max build over ddtx's ofi wire on tcp (layouts of up to N pieces
#                reach ddtx as iov lists; left out without that build)
#   mpich-lay-ddtx-tcp  the --ddtx-layouts build over ddtx's ofi wire on tcp (left out without it)
#   mpich-tcp    the yaksa MPICH over tcp;ofi_rxm (FI_PROVIDER=tcp), MPICH packing
#   mpich-net    the yaksa MPICH over libfabric's net provider (not by default: a rank dies of
#                SIGSEGV at start-up between the two hosts, 2026-11-25)
#   ompi-tcp     Debian's Open MPI 4.1, pml ob1 with its own tcp btl
# The table compares mpich-ddtx-tcp with mpich-tcp (issue 11: faster on every layout).
#
# Cases: the OSU-style vector ping-pong (block length x count, stride 2B; --vec adds more) and
# the application layouts of LAYOUTS.md (see mpi_nc_bench.c); --quick runs a smaller set.
# --repeat N runs every stack N times, interleaved, and reports the median of the runs (the host
# may be shared).  Prints a table (latency per stack: the fastest batch of all runs, the estimate
# least disturbed by other load; --stat median for the median), the ratio to the shm provider
# and to the best other stack, and the targets; --plot also draws OUT/mpi_bench.png (installs
# python3-matplotlib).  Raw RESULT lines: OUT/results.txt; the table: OUT/table.txt.
# Before each run OUT/results.txt gets a "# run R STACK: core_bounce ..." line: the host's cost
# of moving memory between two cores at that moment (util/lib.sh ddtx_core_bounce).
# DDTX_PROV_PATH=DIR runs the ddtx stacks over the provider in DIR instead of build-mpi's (an
# older build beside the current one, in separate invocations).
# --report-only redoes the table (and plot) from an existing OUT/results.txt without running.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

ARGV=("$@")
STACKS=""
QUICK=0
PLOT=0
CASES=""
VEC=""
REPEAT=1
BATCHES=7
STAT=min
REPORT_ONLY=0
OUT=""
HOSTS=0
while [ $# -gt 0 ]; do
  case $1 in
    --quick) QUICK=1; shift ;;
    --plot) PLOT=1; shift ;;
    --cases) CASES=$2; shift 2 ;;
    --vec) VEC=$2; shift 2 ;;
    --stacks) STACKS=$2; shift 2 ;;
    --repeat) REPEAT=$2; shift 2 ;;
    --batches) BATCHES=$2; shift 2 ;;
    --stat) STAT=$2; shift 2 ;;
    --report-only) REPORT_ONLY=1; shift ;;
    --out) OUT=$2; shift 2 ;;
    --hosts) HOSTS=1; shift ;;
    -h|--help) sed -n '2,55p' "$0"; exit 0 ;;
    *) echo "mpi-bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [ $HOSTS = 1 ]; then
  : "${STACKS:=mpich-ddtx-tcp,mpich-iov-ddtx-tcp,mpich-lay-ddtx-tcp,mpich-ddtx-rxm,mpich-ddtx-net,mpich-tcp,ompi-tcp}"
  : "${OUT:=$DDTX_ROOT/build-mpi-tests/bench-hosts}"
else
  : "${STACKS:=mpich-ddtx,mpich-iov-ddtx,mpich-lay-ddtx,mpich-dl-ddtx,mpich-shm,mpich-tcp,ompi-sm,deb-mpich}"
  : "${OUT:=$DDTX_ROOT/build-mpi-tests/bench}"
fi

PREFIX=${DDTX_MPICH_PREFIX:-$(util/build-mpich.sh --print-prefix)}
IOV_PREFIX=${DDTX_MPICH_IOV_PREFIX:-$(ls -dt /opt/ddtx-mpich-yaksa-iov* 2>/dev/null | head -n1)}
DL_PREFIX=${DDTX_MPICH_DATALOOP_PREFIX:-$(util/build-mpich.sh --dataloop --print-prefix)}
LAY_PREFIX=${DDTX_MPICH_LAYOUTS_PREFIX:-$(util/build-mpich.sh --ddtx-layouts --print-prefix)}
BUILD=$DDTX_ROOT/build-mpi
BIN=$DDTX_ROOT/build-mpi-tests
PROV_PATH=${DDTX_PROV_PATH:-$BUILD/prov/ddtx}
mkdir -p "$OUT"
export IPATH_NO_BACKTRACE=1

if [ $REPORT_ONLY = 0 ]; then
# ---- prerequisites ---------------------------------------------------------------------------
# (--hosts: made here, then the script runs again inside util/hosts.sh run, where DDTX_HOSTS is set)
if [ -z "${DDTX_HOSTS:-}" ]; then
  pkgs=(openmpi-bin libopenmpi-dev mpich libmpich-dev)
  [ $HOSTS = 1 ] && pkgs=(openmpi-bin libopenmpi-dev iproute2 util-linux)   # no Debian MPICH there
  [ $PLOT = 1 ] && pkgs+=(python3-matplotlib)
  ddtx_mpi_prereqs "$OUT" "$BUILD" "$BIN" mpich "${pkgs[@]}" || exit 1
  [ $HOSTS = 1 ] && exec util/hosts.sh run "$0" "${ARGV[@]}"
fi

# The variant stacks whose build is missing are left out; the test programs are built against
# every installed variant (tests/mpi/build.sh: BIN/mpich-<prefix name>).
have_build() { [ -n "$1" ] && [ -x "$1/bin/mpiexec" ] && [ -f "$1/.ddtx-mpich-complete" ]; }
IFS=, read -r -a want <<<"$STACKS"
kept=()
for s in "${want[@]}"; do
  case $s in
    mpich-iov-ddtx|mpich-iov-ddtx-tcp) have_build "$IOV_PREFIX" || { echo "mpi-bench.sh: $s left out: no util/build-mpich.sh --iov-max N build"; continue; } ;;
    mpich-lay-ddtx|mpich-lay-ddtx-tcp|mpich-lay-ddtx-msg) have_build "$LAY_PREFIX" || { echo "mpi-bench.sh: $s left out: no util/build-mpich.sh --ddtx-layouts build in $LAY_PREFIX"; continue; } ;;
    mpich-dl-ddtx) have_build "$DL_PREFIX" || { echo "mpi-bench.sh: $s left out: no util/build-mpich.sh --dataloop build in $DL_PREFIX"; continue; } ;;
  esac
  kept+=("$s")
done
STACKS=$(IFS=,; echo "${kept[*]}")
variant_bin() { echo "$BIN/mpich-$(basename "$1")/mpi_nc_bench"; }

ARGS=(-batches "$BATCHES")
[ $QUICK = 1 ] && ARGS+=(-quick)
[ -n "$CASES" ] && ARGS+=(-cases "$CASES")
[ -n "$VEC" ] && ARGS+=(-vec "$VEC")
ROOTARG=()
[ "$(id -u)" -eq 0 ] && ROOTARG=(--allow-run-as-root)

# --hosts: rank 0 on host A, rank 1 on host B, each bound to a core of its own (on-core.sh);
# mpiexec/mpirun start on host A and reach host B through launch.sh.  MPICH prints its
# provider choice (MPIR_CVAR_DEBUG_SUMMARY), which check_provider holds against the stack's name.
A=${DDTX_HOST_A_ADDR:-} B=${DDTX_HOST_B_ADDR:-}
HYDRA=(-launcher rsh -launcher-exec "$DDTX_ROOT/tests/mpi/hosts/launch.sh" -localhost "$A"
       -hosts "$A:1,$B:1" -n 2 "$DDTX_ROOT/tests/mpi/hosts/on-core.sh")
run_stack_hosts() { # run_stack_hosts NAME -> RESULT lines on stdout
  local s=$1
  case $s in
    mpich-ddtx-tcp|mpich-ddtx-net|mpich-ddtx-rxm|mpich-iov-ddtx-tcp|mpich-lay-ddtx-tcp|\
    mpich-ddtx-msg|mpich-lay-ddtx-msg)
      local core=${s#mpich-*ddtx-} prefix=$PREFIX bin=$BIN/ddtx-mpich/mpi_nc_bench ep=rdm
      [ $core = rxm ] && core="tcp;ofi_rxm"
      [ $core = msg ] && { core=tcp; ep=msg; }
      [ $s = mpich-iov-ddtx-tcp ] && { prefix=$IOV_PREFIX; bin=$(variant_bin "$IOV_PREFIX"); }
      [[ $s == mpich-lay-ddtx-* ]] && { prefix=$LAY_PREFIX; bin=$(variant_bin "$LAY_PREFIX"); }
      util/hosts.sh on A env MPIR_CVAR_DEBUG_SUMMARY=1 FI_PROVIDER_PATH="$PROV_PATH" FI_DDTX_WIRE=ofi \
        FI_PROVIDER="ddtx,${core%;*}" FI_DDTX_OFI_PROVIDER="$core" FI_DDTX_OFI_EP_TYPE=$ep \
        "$prefix/bin/mpiexec" "${HYDRA[@]}" "$bin" -label $s "${ARGS[@]}" ;;
    mpich-tcp|mpich-net)
      util/hosts.sh on A env MPIR_CVAR_DEBUG_SUMMARY=1 FI_PROVIDER="${s#mpich-}" \
        "$PREFIX/bin/mpiexec" "${HYDRA[@]}" "$BIN/ddtx-mpich/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    ompi-tcp)
      # oob and btl over the veth network only: 127.0.0.1 exists on both hosts
      util/hosts.sh on A mpirun.openmpi "${ROOTARG[@]}" --mca plm_rsh_agent "$DDTX_ROOT/tests/mpi/hosts/launch.sh" \
        --host "$A:1,$B:1" -n 2 --bind-to none --mca oob_tcp_if_include "${A%.*}.0/30" \
        --mca pml ob1 --mca btl self,tcp --mca btl_tcp_if_include "${A%.*}.0/30" \
        "$DDTX_ROOT/tests/mpi/hosts/on-core.sh" "$BIN/openmpi/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    *) echo "mpi-bench.sh: unknown stack $s with --hosts" >&2; return 2 ;;
  esac
}
# check_provider NAME LOG: MPICH's selected provider is the one the stack's name says
check_provider() {
  local want sel
  case $1 in
    mpich-ddtx-*|mpich-iov-ddtx-*|mpich-lay-ddtx-*) want="*ddtx" ;;    # ddtx, or the layered name (tcp;ddtx)
    mpich-tcp) want="tcp;ofi_rxm" ;;
    mpich-net) want="net" ;;
    *) return 0 ;;
  esac
  sel=$(grep -m1 'libfabric provider:' "$2" | sed 's/^.*libfabric provider: *//; s/ .*//')
  # shellcheck disable=SC2053  # $want is a pattern
  [[ "$sel" == $want ]] || { echo "  $1: MPICH selected '${sel:-nothing}', not $want: its results left out"; return 1; }
}

run_stack() { # run_stack NAME -> RESULT lines on stdout
  local s=$1
  [ $HOSTS = 1 ] && { run_stack_hosts "$s"; return; }
  case $s in
    mpich-ddtx)
      env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=ddtx FI_PROVIDER_PATH="$PROV_PATH" \
        "$PREFIX/bin/mpiexec" -n 2 -bind-to core "$BIN/ddtx-mpich/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    mpich-iov-ddtx)
      env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=ddtx FI_PROVIDER_PATH="$PROV_PATH" \
        "$IOV_PREFIX/bin/mpiexec" -n 2 -bind-to core "$(variant_bin "$IOV_PREFIX")" -label $s "${ARGS[@]}" ;;
    mpich-lay-ddtx)
      env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=ddtx FI_PROVIDER_PATH="$PROV_PATH" \
        "$LAY_PREFIX/bin/mpiexec" -n 2 -bind-to core "$(variant_bin "$LAY_PREFIX")" -label $s "${ARGS[@]}" ;;
    mpich-dl-ddtx)
      env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=ddtx FI_PROVIDER_PATH="$PROV_PATH" \
        "$DL_PREFIX/bin/mpiexec" -n 2 -bind-to core "$(variant_bin "$DL_PREFIX")" -label $s "${ARGS[@]}" ;;
    mpich-shm)
      env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=shm \
        "$PREFIX/bin/mpiexec" -n 2 -bind-to core "$BIN/ddtx-mpich/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    mpich-tcp)
      env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=tcp FI_TCP_IFACE=lo \
        "$PREFIX/bin/mpiexec" -n 2 -bind-to core "$BIN/ddtx-mpich/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    ompi-sm)
      mpirun.openmpi "${ROOTARG[@]}" -n 2 --bind-to core --mca pml ob1 --mca btl self,vader \
        "$BIN/openmpi/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    deb-mpich)
      mpiexec.mpich -n 2 -bind-to core "$BIN/deb-mpich/mpi_nc_bench" -label $s "${ARGS[@]}" ;;
    *) echo "mpi-bench.sh: unknown stack $s" >&2; return 2 ;;
  esac
}

cmd="util/mpi-bench.sh"
[ $HOSTS = 1 ] && cmd+=" --hosts"
[ $QUICK = 1 ] && cmd+=" --quick"
[ $PLOT = 1 ] && cmd+=" --plot"
[ -n "$CASES" ] && cmd+=" --cases $CASES"
[ -n "$VEC" ] && cmd+=" --vec $VEC"
cmd+=" --stacks $STACKS --repeat $REPEAT --batches $BATCHES"
{
  echo "# $cmd"
  if [ $HOSTS = 1 ]; then
    echo "# MPICH $PREFIX; rank 0 on host A ($A), rank 1 on host B ($B)"
  else
    echo "# mpich-ddtx $PREFIX; mpich-iov-ddtx ${IOV_PREFIX:-none}; mpich-lay-ddtx $LAY_PREFIX;" \
      "mpich-dl-ddtx ${DL_PREFIX:-none}"
  fi
  echo "# $(date -u +%FT%TZ) $(uname -n) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/results.txt"
SECONDS=0
for ((r = 1; r <= REPEAT; r++)); do
  # rotate the stack order from one repetition to the next
  IFS=, read -r -a order <<<"$STACKS"
  n=${#order[@]}
  for ((i = 0; i < n; i++)); do
    s=${order[$(((i + r - 1) % n))]}
    bounce=$(ddtx_core_bounce)
    echo "mpi-bench.sh: run $r/$REPEAT: $s (${bounce#core_bounce: })"
    echo "# run $r $s: $bounce" >>"$OUT/results.txt"
    run_stack "$s" >"$OUT/run-$s-$r.log" 2>&1
    rc=$?
    if [ $HOSTS = 0 ] || check_provider "$s" "$OUT/run-$s-$r.log"; then
      grep '^RESULT' "$OUT/run-$s-$r.log" >>"$OUT/results.txt"
    fi
    [ $rc = 0 ] || { echo "  $s exited with $rc (see $OUT/run-$s-$r.log)"; tail -3 "$OUT/run-$s-$r.log" | sed 's/^/    /'; }
  done
done
echo "mpi-bench.sh: all runs in ${SECONDS}s; load now $(cut -d' ' -f1-3 /proc/loadavg)"
echo "mpi-bench.sh: after the runs, $(ddtx_core_bounce)"

else
  cmd=$(sed -n '1s/^# //p' "$OUT/results.txt")
  if [ $PLOT = 1 ] && ! dpkg-query -W -f='${Status}' python3-matplotlib 2>/dev/null | grep -q "install ok installed"; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO=sudo
    $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
  fi
fi

PY=python3
REPORT=(tests/mpi/bench/mpi_bench_report.py "$OUT/results.txt" --stacks "$STACKS" --stat "$STAT"
        --json "$OUT/results.json")
# across hosts: MPICH over ddtx(tcp) against MPICH over tcp;ofi_rxm (issue 11)
[ $HOSTS = 1 ] && REPORT+=(--subject mpich-ddtx-tcp --beat mpich-tcp
                          --where "rank 0 on host A, rank 1 on host B (util/hosts.sh)")
if [ $PLOT = 1 ]; then
  PY=/usr/bin/python3   # Debian's python3, which python3-matplotlib belongs to
  REPORT+=(--plot "$OUT/mpi_bench.png")
fi
{
  echo "command: $cmd"
  $PY "${REPORT[@]}"
} | tee "$OUT/table.txt"
rc=${PIPESTATUS[0]}
exit $rc
