#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One upstream fabtests client/server program over several providers (and ddtx builds), side by
# side: a figure per transfer size for each, and each column's ratio to the first one.
#   util/bench-fabtests.sh [-c COLUMN]... [-f usec|mbps] [-r RUNS] [-m] [-v] [-H] PROGRAM [ARGS...]
# COLUMN is a provider name (shm, tcp, ...) or ddtx:BUILD (the provider built in BUILD, a path
# relative to the repository root or absolute), optionally followed by ,VAR=VALUE... settings for
# that column alone (ddtx:build,FI_DDTX_EAGER_SIZE=8192); default: -c shm -c ddtx:build.  Each run gets a
# PID, mount and network namespace of its own with a private /dev/shm, as util/fabtests.sh does.
# RUNS > 1 runs the columns round-robin and keeps the best figure per size (lowest usec/xfer or
# highest MB/sec); -m prints the best and the median of the runs (a ping-pong's figure moves by
# up to 2x between runs on a shared 2-core host: many short runs, -r 12 -I 30000, compare both),
# and the median of each round's own ratios (its columns ran one after another, in one regime).
# The fabtests come from util/fabtests.sh's cache (run it once to build them).
# Example: util/bench-fabtests.sh -c shm -c ddtx:build fi_rdm_tagged_pingpong -S all
# -H: server on host B, client on host A of util/hosts.sh (two network namespaces joined by a
# veth pair; root).  There ddtx columns ride the ofi wire on the core FI_DDTX_OFI_PROVIDER names
# (default tcp; ddtx:build,FI_DDTX_OFI_PROVIDER=net for another), other columns are the core
# alone: util/bench-fabtests.sh -H -r 12 -m -c "tcp;ofi_rxm" -c ddtx:build fi_rdm_tagged_pingpong
# Each round starts with a core_bounce line (util/lib.sh): this host's two regimes move every
# figure by 2.5-5x, so read the table against them.
# -v also prints every round's figures, and for a ddtx column run with FI_DDTX_STATS=1 how its
# client's receives went (eager, PACK, SGL and the pulls among those): a size whose messages
# take one way in some runs and another in others shows there, where the best and the median
# mix them.
# Each run is killed after DDTX_BENCH_TIMEOUT seconds (default 300).
# Run it under `flock -x /tmp/ddtx-cpu.lock` on a shared host.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

cols=()
field=""
median=0
verbose=0
runs=1
tmo=${DDTX_BENCH_TIMEOUT:-300}
hosts=0
argv=("$@")
while getopts "c:f:r:mvHh" opt; do
  case $opt in
    H) hosts=1 ;;
    c) cols+=("$OPTARG") ;;
    f) field=$OPTARG ;;
    r) runs=$OPTARG ;;
    m) median=1 ;;
    v) verbose=1 ;;
    *) sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '3,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[ $hosts = 1 ] && [ -z "${DDTX_HOSTS:-}" ] && exec util/hosts.sh run "$0" "${argv[@]}" 
[ ${#cols[@]} -gt 0 ] || cols=(shm ddtx:build)
prog=$1
shift
prog_args=("$@")
if [ -z "$field" ]; then
  case $prog in *pingpong*) field=usec ;; *) field=mbps ;; esac
fi
cache=${DDTX_FABTESTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddtx-fabtests-1.17.0}
bin=$cache/install/bin
[ -x "$bin/$prog" ] || { echo "no $bin/$prog: run util/fabtests.sh once to build fabtests" >&2; exit 1; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# run_one COLUMN OUT: server and client of PROGRAM in namespaces of their own; the client's
# table goes to OUT.
run_one() {
  local col=$1 out=$2 prov env=()
  if [[ $col == ddtx:* ]]; then
    local b=${col#ddtx:} vars=()
    IFS=, read -ra vars <<< "$b"
    b=${vars[0]}
    [[ $b == /* ]] || b=$DDTX_ROOT/$b
    [ -f "$b/prov/ddtx/libddtx-fi.so" ] || { echo "no $b/prov/ddtx/libddtx-fi.so" >&2; return 1; }
    prov=ddtx
    env=(FI_PROVIDER_PATH="$b/prov/ddtx" "${vars[@]:1}")
  else
    prov=$col
  fi
  [ $hosts = 1 ] && { run_hosts "$prov" "$out" "${env[@]}"; return; }
  env "${env[@]}" FI_PROVIDER="$prov" timeout "$tmo" unshare --pid --fork --mount-proc --kill-child --net \
    /bin/sh -c 'ip link set lo up && mount -t tmpfs -o mode=1777,size=50% tmpfs /dev/shm &&
      b=$1; shift; p=$1; shift
      "$b" -p "$p" "$@" -s 127.0.0.1 > /dev/null 2>&1 &
      s=$!; sleep 1
      "$b" -p "$p" "$@" -s 127.0.0.1 127.0.0.1; c=$?
      wait $s; exit $c' sh "$bin/$prog" "$prov" "${prog_args[@]}" > "$out" 2>&1
}

# run_hosts PROVIDER OUT [VAR=VALUE...]: the server on host B, the client on host A.  ddtx goes
# over the ofi wire; FI_PROVIDER names its core too, or libfabric would not initialize it.
run_hosts() {
  local prov=$1 out=$2 core=tcp v
  shift 2
  for v in "$@"; do [[ $v == FI_DDTX_OFI_PROVIDER=* ]] && core=${v#*=}; done
  local env=(FI_PROVIDER="${prov//;/,}")
  [ "$prov" = ddtx ] && env=(FI_PROVIDER="ddtx,${core%%;*}" FI_DDTX_WIRE=ofi
                             FI_DDTX_OFI_PROVIDER="$core")
  timeout "$tmo" util/hosts.sh on B env "${env[@]}" "$@" "$bin/$prog" -p "$prov" \
    "${prog_args[@]}" > /dev/null 2>&1 &
  local s=$! c
  sleep 0.5
  timeout "$tmo" util/hosts.sh on A env "${env[@]}" "$@" "$bin/$prog" -p "$prov" \
    "${prog_args[@]}" "$DDTX_HOST_B_ADDR" > "$out" 2>&1
  c=$?
  wait $s
  return $c
}

for ((r = 1; r <= runs; r++)); do
  echo "round $r: $(ddtx_core_bounce)"
  for i in "${!cols[@]}"; do
    run_one "${cols[$i]}" "$tmp/$i.$r" || { echo "${cols[$i]} run $r failed:"; tail -5 "$tmp/$i.$r"; }
  done
done

python3 - "$field" "$runs" "$median" "$tmp" "$verbose" "${cols[@]}" <<'PY'
import sys, re
field, runs, median, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
verbose = sys.argv[5] == "1"
cols = sys.argv[6:]
# fabtests rows: bytes iters total time MB/sec usec/xfer Mxfers/sec
def parse(path):
    rows = {}
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return rows
    for l in lines:
        f = l.split()
        if len(f) >= 7 and re.match(r"^\d+(\.\d+)?[kmg]?$", f[0]) and f[3].endswith("s"):
            try:
                rows[f[0]] = float(f[4]) if field == "mbps" else float(f[5])
            except ValueError:
                pass
    return rows
vals = []
order = []
for i in range(len(cols)):
    b = {}
    for r in range(1, runs + 1):
        for k, v in parse("%s/%d.%d" % (tmp, i, r)).items():
            if k not in order:
                order.append(k)
            b.setdefault(k, []).append(v)
    vals.append(b)
unit = "usec/xfer (lower is better)" if field == "usec" else "MB/sec (higher is better)"
w = [max(12, len(c) + 2) for c in cols]

def table(title, pick):
    fig = [{k: pick(v) for k, v in b.items()} for b in vals]
    print("%s of %d run(s), %s" % (title, runs, unit))
    hdr = "%8s" % "bytes" + "".join("%*s" % (w[i], c) for i, c in enumerate(cols))
    hdr += "".join("%12s" % ("%d/%d" % (j, 0)) for j in range(1, len(cols)))
    print(hdr)
    for k in order:
        line = "%8s" % k
        for i, b in enumerate(fig):
            line += "%*s" % (w[i], "%.2f" % b[k] if k in b else "-")
        base = fig[0].get(k)
        for b in fig[1:]:
            v = b.get(k)
            line += "%12s" % ("%.2fx" % (v / base) if v and base else "-")
        print(line)

def median_of(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

# FI_DDTX_STATS=1's lines in a ddtx client's output: the receives of each way.
WAYS = (("eager", r"^ddtx stats:\s+eager\s+ops (\d+)"), ("pack", r"^ddtx stats:\s+pack\s+ops (\d+)"),
        ("sgl", r"^ddtx stats:\s+sgl\s+ops (\d+)"), ("of which pulls", r"^ddtx stats:\s+pulls (\d+)"))
def ways(path):
    try:
        text = open(path).read()
    except OSError:
        return ""
    got = []
    for name, pat in WAYS:
        m = re.search(pat, text, re.M)
        if m:
            got.append("%s %s" % (name, m.group(1)))
    return " [" + ", ".join(got) + "]" if got else ""
if verbose:
    print("each round, %s" % unit)
    for r in range(1, runs + 1):
        figs = [parse("%s/%d.%d" % (tmp, i, r)) for i in range(len(cols))]
        for k in order:
            line = "round %d %8s" % (r, k)
            for i, c in enumerate(cols):
                line += "  %s %s" % (c, "%.2f" % figs[i][k] if k in figs[i] else "-")
            print(line)
        for i, c in enumerate(cols):
            taken = ways("%s/%d.%d" % (tmp, i, r))
            if taken:
                print("round %d %8s  %s client's receives:%s" % (r, "", c, taken))

table("best", min if field == "usec" else max)
if median:
    table("median", median_of)

# Each round runs the columns one after another, so a ratio taken within a round compares
# them in (nearly) one regime of the host; the median of those ratios moves less than a
# ratio of figures from different rounds.
def paired():
    runs_of = []
    for i in range(len(cols)):
        runs_of.append([parse("%s/%d.%d" % (tmp, i, r)) for r in range(1, runs + 1)])
    print("median of the %d rounds' own ratios (column j / column 0 in the same round)" % runs)
    print("%8s" % "bytes" + "".join("%12s" % ("%d/%d" % (j, 0)) for j in range(1, len(cols))))
    for k in order:
        line = "%8s" % k
        for j in range(1, len(cols)):
            q = [rj[k] / r0[k] for r0, rj in zip(runs_of[0], runs_of[j])
                 if r0.get(k) and rj.get(k)]
            line += "%12s" % ("%.2fx" % median_of(q) if q else "-")
        print(line)
if median and runs > 1:
    paired()
print("ratio columns: column j / column 0 (" + ", ".join("%d=%s" % (j, c) for j, c in enumerate(cols)) + ")")
PY
