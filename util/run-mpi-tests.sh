#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Runs ddtx under real MPI consumers (MPICH 4.0.2 ch4:ofi and Open MPI 4.1) on one host:
#
#   util/run-mpi-tests.sh [--only STAGES] [--dirs D1,D2,...] [--maxnp N] [--timeout S]
#                         [--providers P1,P2] [--out DIR] [--jobs N] [--hosts]
#
# Stages (all but hosts by default; --only takes a comma-separated subset; --hosts = --only hosts):
#   fabric   tests/mpi/repro/consumer_check: MPICH's and Open MPI's provider requirements, checked
#            at the libfabric level the way they use libfabric
#   mpich    MPICH selects ddtx (MPIR_CVAR_DEBUG_SUMMARY), tests/mpi/mpi_check with 2 and 4 ranks,
#            tests/mpi/nc_iov: noncontiguous sends of up to 32 pieces go through MPICH's iov path
#            (ddtx statistics: iov_entries_max 32), 33 and more are packed by MPICH
#   ompi     Open MPI's ofi MTL over ddtx: tests/mpi/mpi_check with 2, 3, 4 ranks and
#            MPI_THREAD_MULTIPLE; MPICH's pt2pt and datatype tests built with Open MPI's mpicc,
#            over ddtx, over Open MPI's default shared-memory path and over the ofi MTL with
#            libfabric's tcp provider (which separates MTL bugs from provider bugs), compared
#   suite    MPICH's own test suite (test/mpi of the same Debian source package; directories
#            --dirs, default pt2pt,datatype,rma,coll,comm; tests asking for more than --maxnp
#            ranks run with --maxnp, default 2) with each of --providers (default ddtx,shm), a
#            rerun of every test whose outcome differs, and a comparison of the runs.  MPICH's
#            progress engine never yields, so with more ranks than cores tests crawl whatever
#            the provider: on 2 cores --maxnp 2 takes about 15 minutes per provider, --maxnp 4
#            hours (3-rank RMA tests take minutes each).
#   hosts    ranks on two "hosts" (util/hosts.sh: network namespaces; root, else skipped):
#            tests/mpi/mpi_check with 4 ranks, 2 per host, over ddtx's wire per peer
#            (FI_DDTX_WIRE=multi, the ofi wire over libfabric's net core between the hosts),
#            every rank's ddtx statistics asserting the wires that carried its messages:
#            MPICH (Hydra with tests/mpi/hosts/launch.sh as remote shell) with MPIR_CVAR_NOLOCAL=1
#            and with MPICH's own shared memory (MPICH's default), and Open MPI's ofi MTL
#            (launch.sh as rsh agent).  About a minute.  (The meson test hosts-mpich runs the two
#            MPICH jobs over the net and tcp cores when MPICH is installed.)
#
# Prerequisites are set up on the way (each step does nothing when already done): Debian packages,
# MPICH (util/build-mpich.sh, ~10 min on 2 cores), Open MPI (openmpi-bin, libopenmpi-dev), the
# provider (meson build directory build-mpi), the test programs (tests/mpi/build.sh), the test
# suites (configured and built under /opt/ddtx-mpich-src).  Results go to --out (default
# build-mpi-tests/results).  The last line is "<passed> passed, <failed> failed"; the exit status
# is non-zero when a check failed or a suite test passed with the last provider but not ddtx.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

STAGES=fabric,mpich,ompi,suite
DIRS=pt2pt,datatype,rma,coll,comm
MAXNP=2
TIMEOUT=120
PROVIDERS=ddtx,shm
JOBS=2
OUT=$DDTX_ROOT/build-mpi-tests/results
while [ $# -gt 0 ]; do
  case $1 in
    --only) STAGES=$2; shift 2 ;;
    --dirs) DIRS=$2; shift 2 ;;
    --maxnp) MAXNP=$2; shift 2 ;;
    --timeout) TIMEOUT=$2; shift 2 ;;
    --providers) PROVIDERS=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --jobs) JOBS=$2; shift 2 ;;
    --hosts) STAGES=hosts; shift ;;
    -h|--help) sed -n '2,36p' "$0"; exit 0 ;;
    *) echo "run-mpi-tests.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
stage() { [[ ",$STAGES," == *",$1,"* ]]; }

PREFIX=${DDTX_MPICH_PREFIX:-$(util/build-mpich.sh --print-prefix)}
SRC_ROOT=${DDTX_MPICH_SRC:-/opt/ddtx-mpich-src}
BUILD=$DDTX_ROOT/build-mpi
BIN=$DDTX_ROOT/build-mpi-tests
PROV_PATH=$BUILD/prov/ddtx
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd)   # absolute: the suites run from their own directories
export IPATH_NO_BACKTRACE=1   # libinfinipath (loaded by Debian's libfabric) would catch signals
export OMPI_MCA_rmaps_base_oversubscribe=1

npass=0
nfail=0
report() { # report OK|FAIL name detail...
  local st=$1 name=$2
  shift 2
  if [ "$st" = OK ]; then
    npass=$((npass + 1))
    echo "PASS $name${*:+: $*}"
  else
    nfail=$((nfail + 1))
    echo "FAIL $name${*:+: $*}"
  fi
}
SECONDS=0
elapsed() { printf '%dm%02ds' $((SECONDS / 60)) $((SECONDS % 60)); }

# ---- prerequisites -------------------------------------------------------------------------
want_mpich=""
if stage mpich || stage suite || stage ompi || stage hosts; then want_mpich=mpich; fi
ddtx_mpi_prereqs "$OUT" "$BUILD" "$BIN" "$want_mpich" openmpi-bin libopenmpi-dev perl iproute2 util-linux || { echo "run-mpi-tests.sh: prerequisites failed"; exit 1; }
echo "run-mpi-tests.sh: prerequisites ready ($(elapsed))"

MPICH_ENV=(env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER=ddtx FI_PROVIDER_PATH="$PROV_PATH")
MPIEXEC=$PREFIX/bin/mpiexec
OMPI_RUN=(mpirun.openmpi --oversubscribe --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ddtx
          -x FI_PROVIDER_PATH="$PROV_PATH" -x IPATH_NO_BACKTRACE)
[ "$(id -u)" -eq 0 ] && OMPI_RUN+=(--allow-run-as-root)

# ---- fabric: libfabric-level requirement checks ----------------------------------------------
if stage fabric; then
  echo "== libfabric-level requirements of MPICH 4.0.2 and Open MPI 4.1 (consumer_check)"
  FI_PROVIDER_PATH=$PROV_PATH FI_PROVIDER=ddtx timeout 300 "$BIN/consumer_check" all >"$OUT/consumer_check.txt" 2>&1
  rc=$?
  grep -E '^(PASS|FAIL|INFO)' "$OUT/consumer_check.txt" | sed 's/^/  /'
  report "$([ $rc = 0 ] && echo OK || echo FAIL)" consumer_check "$(tail -1 "$OUT/consumer_check.txt")"
fi

# ---- mpich: selection, mpi_check, nc_iov -----------------------------------------------------
if stage mpich; then
  echo "== MPICH 4.0.2 ch4:ofi over ddtx"
  "${MPICH_ENV[@]}" MPIR_CVAR_DEBUG_SUMMARY=1 timeout 120 "$MPIEXEC" -n 2 "$BIN/ddtx-mpich/mpi_check" -only pt2pt-sizes >"$OUT/mpich-summary.txt" 2>&1
  sel=$(grep -m1 '^libfabric provider:' "$OUT/mpich-summary.txt")
  iovl=$(grep -m1 '^tx_iov_limit:' "$OUT/mpich-summary.txt")
  if [[ "$sel" == "libfabric provider: ddtx"* ]]; then
    report OK mpich-selects-ddtx "$sel, $iovl, $(grep -m1 'provider: ddtx, score' "$OUT/mpich-summary.txt")"
  else
    report FAIL mpich-selects-ddtx "${sel:-no summary} (see $OUT/mpich-summary.txt)"
  fi
  for np in 2 4; do
    "${MPICH_ENV[@]}" timeout 600 "$MPIEXEC" -n $np "$BIN/ddtx-mpich/mpi_check" >"$OUT/mpich-mpi_check-$np.txt" 2>&1
    rc=$?
    grep '^FAIL' "$OUT/mpich-mpi_check-$np.txt" | sed 's/^/  /'
    report "$([ $rc = 0 ] && echo OK || echo FAIL)" "mpich-mpi_check-np$np" "$(grep '^mpi_check:' "$OUT/mpich-mpi_check-$np.txt" || echo "rc $rc")"
  done
  # nc_iov: pieces <= 32 go out as iov lists (iov_entries_max 32 on both ranks); more are packed
  for set in "2,4,8,16,31,32:eq32" "33,64,256:lt32"; do
    pieces=${set%%:*}
    want=${set##*:}
    f=$OUT/mpich-nc_iov-${want}.txt
    "${MPICH_ENV[@]}" FI_DDTX_STATS=1 timeout 600 "$MPIEXEC" -n 2 "$BIN/ddtx-mpich/nc_iov" -pieces "$pieces" >"$f" 2>&1
    rc=$?
    maxes=$(grep -o 'iov_entries_max [0-9]*' "$f" | awk '{print $2}' | sort -n | tr '\n' ' ')
    ops=$(grep -o 'tx_ops [0-9]*' "$f" | awk '{s+=$2} END {print s+0}')
    ok=1
    [ $rc = 0 ] || ok=0
    [ "$(echo $maxes | wc -w)" = 2 ] || ok=0
    for m in $maxes; do
      if [ $want = eq32 ]; then [ "$m" = 32 ] || ok=0; else [ "$m" -lt 32 ] || ok=0; fi
    done
    wtxt="= 32"
    [ $want = lt32 ] && wtxt="< 32"
    report "$([ $ok = 1 ] && echo OK || echo FAIL)" "mpich-nc_iov-pieces-$pieces" \
      "$(grep '^nc_iov:' "$f" | sed 's/ (pieces.*//'); ddtx iov_entries_max per rank: ${maxes:-none}(want $wtxt); ddtx tx_ops $ops"
    grep -m4 -E '^ddtx stats: +(eager|pack|sgl|umr) ' "$f" | sed 's/^/    rank: /' 
  done
fi

# ---- ompi: Open MPI's ofi MTL over ddtx ------------------------------------------------------
if stage ompi; then
  echo "== Open MPI 4.1 (pml cm, mtl ofi) over ddtx"
  for np in 2 3 4; do
    FI_DDTX_STATS=1 timeout 600 "${OMPI_RUN[@]}" -x FI_DDTX_STATS -n $np "$BIN/openmpi/mpi_check" >"$OUT/ompi-mpi_check-$np.txt" 2>&1
    rc=$?
    grep '^FAIL' "$OUT/ompi-mpi_check-$np.txt" | sed 's/^/  /'
    nst=$(grep -c '^ddtx stats (domain' "$OUT/ompi-mpi_check-$np.txt")
    ok=$([ $rc = 0 ] && [ "$nst" = $np ] && echo OK || echo FAIL)
    report $ok "ompi-mpi_check-np$np" "$(grep '^mpi_check:' "$OUT/ompi-mpi_check-$np.txt" || echo "rc $rc"); ddtx domains $nst/$np"
  done
  timeout 600 "${OMPI_RUN[@]}" -n 2 "$BIN/openmpi/mpi_check" -mt >"$OUT/ompi-mpi_check-mt.txt" 2>&1
  rc=$?
  report "$([ $rc = 0 ] && grep -q '^PASS pt2pt-thread-multiple' "$OUT/ompi-mpi_check-mt.txt" && echo OK || echo FAIL)" \
    ompi-mpi_check-thread-multiple "$(grep '^mpi_check:' "$OUT/ompi-mpi_check-mt.txt" || echo "rc $rc")"

  # MPICH's pt2pt and datatype tests built with Open MPI's mpicc
  OSUITE=$SRC_ROOT/testsuite-ompi
  if [ ! -x "$OSUITE/runtests" ]; then
    mkdir -p "$OSUITE"
    (cd "$OSUITE" && MPICC=/usr/bin/mpicc.openmpi CC=/usr/bin/mpicc.openmpi MPIEXEC=/usr/bin/mpiexec.openmpi \
      "$SRC_ROOT/mpich-4.0.2/test/mpi/configure" --with-mpi=/usr/lib/x86_64-linux-gnu/openmpi \
      --disable-fortran --disable-cxx --disable-romio --disable-spawn --disable-dtpools \
      --disable-ft-tests --disable-perftest --enable-strictmpi >configure.out 2>&1) ||
      echo "run-mpi-tests.sh: configuring the suite for Open MPI failed (see $OSUITE/configure.out)"
  fi
  if [ -x "$OSUITE/runtests" ]; then
    # MPI-1 functions removed from Open MPI's mpi.h, mapped onto their replacements
    cp tests/mpi/compat/ompi_mpi1_compat.h "$OSUITE/"
    for d in util dtpools pt2pt datatype; do
      make -k -j"$JOBS" -C "$OSUITE/$d" CPPFLAGS="-include $OSUITE/ompi_mpi1_compat.h" >"$OSUITE/make-$d.out" 2>&1
    done
    # Three runs: the ofi MTL over ddtx, Open MPI's default path (ob1/vader), and the ofi MTL over
    # libfabric's tcp provider, which tells MTL bugs from provider bugs.  The check: every test
    # that passes with the MTL over tcp passes over ddtx.
    root=""
    [ "$(id -u)" -eq 0 ] && root=" --allow-run-as-root"
    for run in ddtx vader mtl-tcp; do
      case $run in
        ddtx) export MPITEST_MPIEXECARG="--oversubscribe$root --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include ddtx -x FI_PROVIDER_PATH=$PROV_PATH -x IPATH_NO_BACKTRACE" ;;
        vader) export MPITEST_MPIEXECARG="--oversubscribe$root" ;;
        mtl-tcp) export MPITEST_MPIEXECARG="--oversubscribe$root --mca pml cm --mca mtl ofi --mca mtl_ofi_provider_include tcp -x FI_TCP_IFACE=lo -x IPATH_NO_BACKTRACE" ;;
      esac
      (cd "$OSUITE" && FI_TCP_IFACE=lo MPITEST_TIMEOUT=$TIMEOUT ./runtests -srcdir="$SRC_ROOT/mpich-4.0.2/test/mpi" \
         -tests=testlist -testdirs=pt2pt,datatype -mpiexec=/usr/bin/mpiexec.openmpi -maxnp="$MAXNP" \
         -tapfile="$OUT/ompi-suite-$run.tap" >"$OUT/ompi-suite-$run.log" 2>&1)
      unset MPITEST_MPIEXECARG
    done
    python3 tests/mpi/suite_compare.py ompi+ddtx="$OUT/ompi-suite-ddtx.tap" ompi-vader="$OUT/ompi-suite-vader.tap" \
      ompi+tcp="$OUT/ompi-suite-mtl-tcp.tap" --subject ompi+ddtx --reference ompi+tcp >"$OUT/ompi-suite-compare.txt" 2>&1
    rc=$?
    sed 's/^/  /' "$OUT/ompi-suite-compare.txt"
    report "$([ $rc = 0 ] && echo OK || echo FAIL)" ompi-mpich-suite-pt2pt-datatype "$(tail -1 "$OUT/ompi-suite-compare.txt")"
  fi
fi

# ---- hosts: MPICH and Open MPI with ranks on two "hosts" ------------------------------------------
if stage hosts; then
  echo "== MPICH and Open MPI across two hosts (util/hosts.sh), ddtx's wire per peer"
  timeout 900 util/hosts.sh run tests/mpi/hosts/across.sh --bin "$BIN" --prov "$PROV_PATH" \
    --out "$OUT" --mpich "$PREFIX" >"$OUT/hosts.txt" 2>&1
  rc=$?
  if [ $rc = 77 ]; then
    echo "  skipped: $(tail -1 "$OUT/hosts.txt")"
  else
    while read -r st rest; do
      name=${rest%%:*}
      report "$([ "$st" = PASS ] && echo OK || echo FAIL)" "hosts-$name" "${rest#*: }"
    done < <(grep -E '^(PASS|FAIL) ' "$OUT/hosts.txt")
    grep -qE '^(PASS|FAIL) ' "$OUT/hosts.txt" || report FAIL hosts "rc $rc, no result (see $OUT/hosts.txt)"
  fi
fi

# ---- suite: MPICH's own test suite with each provider ----------------------------------------
if stage suite; then
  echo "== MPICH test suite ($DIRS; up to $MAXNP ranks; providers $PROVIDERS; timeout ${TIMEOUT}s per test)"
  SUITE=$SRC_ROOT/testsuite-$(basename "$PREFIX")   # configured against that MPICH build
  if [ ! -x "$SUITE/runtests" ]; then
    mkdir -p "$SUITE"
    (cd "$SUITE" && "$SRC_ROOT/mpich-4.0.2/test/mpi/configure" --with-mpi="$PREFIX" --disable-fortran --disable-cxx \
      --disable-romio --disable-spawn --disable-dtpools --disable-ft-tests --disable-perftest >configure.out 2>&1) ||
      { echo "run-mpi-tests.sh: configuring MPICH's test suite failed (see $SUITE/configure.out)"; exit 1; }
  fi
  t0=$SECONDS
  for d in util dtpools ${DIRS//,/ }; do make -k -j"$JOBS" -C "$SUITE/$d" >"$SUITE/make-$d.out" 2>&1; done
  echo "  test programs built ($((SECONDS - t0)) s)"
  taps=()
  for p in ${PROVIDERS//,/ }; do
    t0=$SECONDS
    (cd "$SUITE" && env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER="$p" FI_PROVIDER_PATH="$PROV_PATH" MPITEST_TIMEOUT="$TIMEOUT" \
      ./runtests -srcdir="$SRC_ROOT/mpich-4.0.2/test/mpi" -tests=testlist -testdirs="$DIRS" -mpiexec="$MPIEXEC" \
      -maxnp="$MAXNP" -tapfile="$OUT/suite-$p.tap" >"$OUT/suite-$p.log" 2>&1)
    echo "  FI_PROVIDER=$p: $(grep -cE '^ok' "$OUT/suite-$p.tap") ok, $(grep -cE '^not ok' "$OUT/suite-$p.tap") not ok ($((SECONDS - t0)) s)"
    taps+=("$p=$OUT/suite-$p.tap")
  done
  # Every test whose outcome differs is run once more, alone, with each provider (the host may be
  # loaded: a timeout under load is not a provider difference); reruns replace first outcomes.
  rm -f "$SUITE"/*/testlist.retry
  python3 tests/mpi/suite_compare.py "${taps[@]}" --write-retry "$SUITE" "$MAXNP" >"$OUT/suite-compare-first.txt" 2>&1
  rdirs=$(sed -n 's/^retry dirs: //p' "$OUT/suite-compare-first.txt")
  retry=()
  if [ -n "$rdirs" ]; then
    echo "  rerunning $(cat "$SUITE"/*/testlist.retry 2>/dev/null | grep -c .) differing test(s) with each provider"
    for p in ${PROVIDERS//,/ }; do
      (cd "$SUITE" && env MPIR_CVAR_NOLOCAL=1 FI_PROVIDER="$p" FI_PROVIDER_PATH="$PROV_PATH" MPITEST_TIMEOUT="$TIMEOUT" \
        ./runtests -srcdir="$SRC_ROOT/mpich-4.0.2/test/mpi" -tests=testlist.retry -testdirs="$rdirs" \
        -mpiexec="$MPIEXEC" -maxnp="$MAXNP" -tapfile="$OUT/suite-$p-retry.tap" >"$OUT/suite-$p-retry.log" 2>&1)
      retry+=(--retry "$p=$OUT/suite-$p-retry.tap")
    done
  fi
  python3 tests/mpi/suite_compare.py "${taps[@]}" "${retry[@]}" >"$OUT/suite-compare.txt" 2>&1
  rc=$?
  sed 's/^/  /' "$OUT/suite-compare.txt"
  report "$([ $rc = 0 ] && echo OK || echo FAIL)" mpich-suite "$(tail -1 "$OUT/suite-compare.txt")"
fi

echo "run-mpi-tests.sh: results in $OUT ($(elapsed))"
echo "$npass passed, $nfail failed"
[ $nfail = 0 ]
