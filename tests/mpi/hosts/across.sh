#!/bin/bash
# SPDX-License-Identifier: BSD-2-Clause
# MPI jobs with ranks on both "hosts" of util/hosts.sh (run inside "util/hosts.sh run"; what
# util/run-mpi-tests.sh --hosts does): 4 ranks, 2 per host, tests/mpi/mpi_check (every byte
# checked) over ddtx with a wire per peer (FI_DDTX_WIRE=multi: shm to the rank on the same host,
# the ofi wire over a libfabric core, "net" or --core, to the two on the other host), and ddtx's
# statistics of every rank asserting which wire carried what.
#
#   across.sh --bin DIR --prov DIR --out DIR [--mpich PREFIX] [--only mpich,mpich-shmmod,ompi]
#             [--core NAME]   (default: all three jobs, core "net"; the MPICH jobs also pass over
#                             tcp and "tcp;ofi_rxm", 2026-11-25)
#
# Jobs:
#   mpich         MPICH ch4:ofi (PREFIX), Hydra started on host A with the remote shell
#                 tests/mpi/hosts/launch.sh for host B, MPIR_CVAR_NOLOCAL=1 (all traffic through
#                 ddtx): every rank's wire shm and wire ofi both carry messages
#   mpich-shmmod  the same with MPICH's own shared memory between ranks of a host (MPICH's default,
#                 MPIR_CVAR_NOLOCAL=0): ddtx carries only the cross-host traffic (wire ofi; no shm
#                 wire messages).  (Its "hang" was mpi_check's: see pt2pt-nonblocking-anysource.)
#   ompi          Open MPI 4.1, pml cm + ofi MTL over ddtx, mpirun on host A with launch.sh as
#                 its rsh agent: the same per-rank assertion as mpich
# Prints "PASS job: detail" or "FAIL job: detail" per job; exit status 1 if any failed.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
hosts=$root/util/hosts.sh
launch=$here/launch.sh
BIN="" PROV="" OUT="" PREFIX="" ONLY=mpich,mpich-shmmod,ompi CORE=net
while [ $# -gt 0 ]; do
  case $1 in
    --bin) BIN=$2; shift 2 ;;
    --prov) PROV=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --mpich) PREFIX=$2; shift 2 ;;
    --only) ONLY=$2; shift 2 ;;
    --core) CORE=$2; shift 2 ;;
    *) echo "across.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$BIN" ] && [ -n "$PROV" ] && [ -n "$OUT" ] || { echo "across.sh: --bin, --prov and --out are needed" >&2; exit 2; }
: "${DDTX_HOSTS:?across.sh: run it inside util/hosts.sh run}"
A=${DDTX_HOST_A_ADDR:-127.1.0.1} B=${DDTX_HOST_B_ADDR:-127.1.0.2}
mkdir -p "$OUT"
job() { [[ ",$ONLY," == *",$1,"* ]]; }
nfail=0
result() { # result OK|FAIL job detail
  [ "$1" = OK ] && echo "PASS $2: $3" || { echo "FAIL $2: $3"; nfail=$((nfail + 1)); }
}

# The wire per peer over a libfabric core: "net" by default (its own TCP RDM endpoint; tcp;ofi_rxm
# used to lose messages when every rank connects to every other at once, see README "Running
# across hosts"; it no longer does, and tcp's own RDM endpoint works too).
DDTX_ENV=(FI_PROVIDER_PATH="$PROV" FI_DDTX_WIRE=multi FI_DDTX_FABRIC_WIRE=ofi
          FI_DDTX_OFI_PROVIDER="$CORE" FI_DDTX_STATS=1 IPATH_NO_BACKTRACE=1)

# wires LOG FMT: per rank "r:shm_msgs/shm_bytes:ofi_msgs/ofi_bytes" from ddtx's statistics
# (FMT: printf format of the launcher's per-rank output prefix).  The "peers" figure is not used:
# a peer first met through its message (FI_SOURCE) is not counted there (reported, see
# docs/benchmark-results.md).
wires() {
  local log=$1 fmt=$2 r p line l w
  for r in 0 1 2 3; do
    p=$(printf "$fmt" "$r")
    line="$r"
    for w in shm ofi; do
      l=$(grep -F "$p" "$log" | grep -E "ddtx stats: +wire $w " | tail -n1)
      line+=":$(awk '{for (i = 1; i < NF; i++) { if ($i == "msgs") m = $(i + 1); if ($i == "bytes" && b == "") b = $(i + 1) } }
                     END { printf "%s/%s", (m == "" ? "-" : m), (b == "" ? "-" : b) }' <<<"$l")"
    done
    echo "$line"
  done
}
# check_wires LOG FMT any|none: every rank sent or received messages over the ofi wire, and over
# the shm wire (any) or nothing over it (none).
check_wires() {
  local log=$1 fmt=$2 shm=$3 ok=0 r s o
  while IFS=: read -r r s o; do
    [ "${o%%/*}" != - ] && [ "${o%%/*}" -gt 0 ] || ok=1
    if [ "$shm" = any ]; then
      [ "${s%%/*}" != - ] && [ "${s%%/*}" -gt 0 ] || ok=1
    else
      [ "${s%%/*}" = - ] || [ "${s%%/*}" = 0 ] || ok=1
    fi
  done < <(wires "$log" "$fmt")
  return $ok
}
summary() { wires "$1" "$2" | awk -F: '{printf "%srank %s msgs/bytes shm %s ofi %s", (NR > 1 ? "; " : ""), $1, $2, $3}'; }

# ---- MPICH: Hydra on host A, host B through launch.sh ------------------------------------------
mpich_job() { # mpich_job NAME NOLOCAL
  local name=$1 nolocal=$2 log=$OUT/hosts-$1.txt rc
  if [ -z "$PREFIX" ] || [ ! -x "$PREFIX/bin/mpiexec" ]; then
    result FAIL "$name" "no MPICH in '${PREFIX}' (util/build-mpich.sh)"; return
  fi
  # FI_PROVIDER=ddtx,<core>: the core must be named too, or libfabric never initializes the core
  # ddtx's ofi wire runs over; MPICH then scores ddtx above it (atomic ordering, see core/getinfo.c).
  # -localhost: the address host B's proxies connect back to (host names do not resolve here).
  timeout 300 "$hosts" on A env "${DDTX_ENV[@]}" FI_PROVIDER="ddtx,$CORE" MPIR_CVAR_NOLOCAL=$nolocal \
    MPIR_CVAR_DEBUG_SUMMARY=1 \
    "$PREFIX/bin/mpiexec" -launcher rsh -launcher-exec "$launch" -localhost "$A" \
    -hosts "$A:2,$B:2" -n 4 -l "$BIN/ddtx-mpich/mpi_check" >"$log" 2>&1
  rc=$?
  local res sel
  res=$(grep -m1 'mpi_check:' "$log" | sed 's/^\[[0-9]*\] //')
  sel=$(grep -m1 'libfabric provider:' "$log" | sed 's/^\[[0-9]*\] //')
  local hostsseen
  hostsseen=$(grep -c 'ddtx stats (domain' "$log")
  if [ $rc = 0 ] && [[ "$res" == *" 0 failed"* ]] && [[ "$sel" == "libfabric provider: ddtx"* ]] &&
     if [ "$nolocal" = 1 ]; then check_wires "$log" '[%s] ' any; else check_wires "$log" '[%s] ' none; fi; then
    result OK "$name" "$res; $sel; $(summary "$log" '[%s] ')"
  else
    result FAIL "$name" "rc $rc; ${res:-no mpi_check result}; ${sel:-no provider line}; ddtx domains $hostsseen; $(summary "$log" '[%s] ') (see $log)"
  fi
}
job mpich && mpich_job mpich 1
job mpich-shmmod && mpich_job mpich-shmmod 0

# ---- Open MPI: mpirun on host A, orted on host B through launch.sh ------------------------------
if job ompi; then
  log=$OUT/hosts-ompi.txt
  if [ ! -x "$BIN/openmpi/mpi_check" ] || ! command -v mpirun.openmpi >/dev/null; then
    result FAIL ompi "no Open MPI (openmpi-bin) or $BIN/openmpi/mpi_check"
  else
    rootarg=()
    [ "$(id -u)" -eq 0 ] && rootarg=(--allow-run-as-root)
    xs=()
    for v in "${DDTX_ENV[@]}"; do xs+=(-x "$v"); done
    # oob over the veth only: the loopback address 127.0.0.1 exists on both hosts.  The ofi MTL
    # carries point-to-point only; one-sided windows go through it too with osc pt2pt (osc rdma
    # would need an RDMA-capable btl between the hosts).
    # (a network, not interface names: each host knows only its own end of the veth pair)
    net=${A%.*}.0/30
    timeout 300 "$hosts" on A mpirun.openmpi "${rootarg[@]}" --mca plm_rsh_agent "$launch" \
      --host "$A:2,$B:2" -n 4 --tag-output \
      --mca oob_tcp_if_include "$net" --mca btl self --mca osc pt2pt --mca pml cm --mca mtl ofi \
      --mca mtl_ofi_provider_include ddtx "${xs[@]}" "$BIN/openmpi/mpi_check" >"$log" 2>&1
    rc=$?
    res=$(grep -m1 'mpi_check:' "$log" | sed 's/^\[[^]]*\]<[a-z]*>: *//')
    if [ $rc = 0 ] && [[ "$res" == *" 0 failed"* ]] && check_wires "$log" '[1,%s]<stderr>:' any; then
      result OK ompi "$res; $(summary "$log" '[1,%s]<stderr>:')"
    else
      result FAIL ompi "rc $rc; ${res:-no mpi_check result}; $(summary "$log" '[1,%s]<stderr>:') (see $log)"
    fi
  fi
fi
[ $nfail = 0 ]
