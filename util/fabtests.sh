#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Upstream fabtests 1.17.0 over ddtx on one host (issue 10, item 3).
#   util/fabtests.sh [-t "unit functional standard short complex"] [-T SECS] [-p PROVIDER] [-o DIR] [-b BUILD] [-H]
# Builds fabtests from ../shared/fabtests/fabtests-1.17.0.tar.gz outside the repository, once per
# machine (cache: $DDTX_FABTESTS_CACHE, default ~/.cache/ddtx-fabtests-1.17.0), runs each set with
# runfabtests.sh (per-test timeout -T, default 60 s) inside a PID namespace (its cleanup kills
# every fi_* process it can see), and compares the results with util/fabtests-expected.txt:
#   Pass                         -> OK
#   Notrun/Fail listed there     -> SKIP (the reason is in the list)
#   Notrun/Fail not listed       -> FAIL (a test that newly fails or newly stops running)
# Writes OUT/meson-logs/testlog.json (one line per fabtests test, as meson does; read by
# util/run-tests.sh) and OUT/<set>.log (runfabtests' verbose output).  Exit 0 iff nothing FAILs.
# -p shm runs libfabric's shm provider for comparison (no expected list; prints the table only).
# -H: between the two hosts of util/hosts.sh (root): servers on host B (127.1.0.2), clients on
# host A (127.1.0.1); runfabtests "ssh"es to them through util/hosts-ssh.sh.  ddtx then runs
# over a wire that crosses hosts (FI_DDTX_WIRE, default ofi) and its expected list is
# util/fabtests-hosts-expected.txt; -p "tcp;ofi_rxm" or -p net run libfabric's own for comparison.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

sets="unit functional standard short complex"
tmo=${DDTX_FABTESTS_TIMEOUT:-60}
prov=ddtx
out=build-fabtests
build=build
hosts=
while getopts "t:T:p:o:b:Hh" opt; do
  case $opt in
    t) sets=$OPTARG ;;
    T) tmo=$OPTARG ;;
    p) prov=$OPTARG ;;
    o) out=$OPTARG ;;
    b) build=$OPTARG ;;
    H) hosts=1 ;;
    *) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done

tarball=${DDTX_FABTESTS_TARBALL:-$DDTX_ROOT/../shared/fabtests/fabtests-1.17.0.tar.gz}
[ -f "$tarball" ] || tarball=/work/shared/fabtests/fabtests-1.17.0.tar.gz
cache=${DDTX_FABTESTS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/ddtx-fabtests-1.17.0}
prefix=$cache/install

fail_all() {  # fail_all WHY: one failing result, so the suite's count shows it
  echo "fabtests.sh: $1" >&2
  mkdir -p "$out/meson-logs"
  echo "{\"name\": \"ddtx:fabtests / setup\", \"result\": \"FAIL\"}" > "$out/meson-logs/testlog.json"
  exit 1
}

if [ ! -x "$prefix/bin/runfabtests.sh" ]; then
  [ -f "$tarball" ] || fail_all "no $tarball"
  util/install-deps.sh --fabtests >/dev/null || fail_all "installing autoconf automake libtool failed"
  mkdir -p "$cache"
  (
    flock 9
    if [ ! -x "$prefix/bin/runfabtests.sh" ]; then
      echo "=== fabtests: building 1.17.0 into $prefix"
      rm -rf "$cache/src" && mkdir -p "$cache/src"
      tar xzf "$tarball" -C "$cache/src" &&
        cd "$cache/src/fabtests" &&
        ./autogen.sh > "$cache/build.log" 2>&1 &&
        ./configure --with-libfabric=/usr --prefix="$prefix" >> "$cache/build.log" 2>&1 &&
        make -j2 >> "$cache/build.log" 2>&1 && make install >> "$cache/build.log" 2>&1 ||
        { tail -30 "$cache/build.log"; rm -rf "$prefix"; exit 1; }
    fi
  ) 9> "$cache/.lock" || fail_all "building fabtests failed (log: $cache/build.log)"
fi

export IPATH_NO_BACKTRACE=1
if [ "$prov" = ddtx ]; then
  [ -f "$build/prov/ddtx/libddtx-fi.so" ] || fail_all "no $build/prov/ddtx/libddtx-fi.so (build first)"
  export FI_PROVIDER_PATH=$DDTX_ROOT/$build/prov/ddtx
  export FI_PROVIDER=ddtx
  if [ -n "$hosts" ]; then
    # The ofi wire's core must pass FI_PROVIDER too (ddtx's own fi_getinfo asks libfabric for it).
    export FI_DDTX_WIRE=${FI_DDTX_WIRE:-ofi}
    core=${FI_DDTX_OFI_PROVIDER:-tcp;ofi_rxm}
    export FI_PROVIDER=ddtx,${core//;/,}
  fi
else
  export FI_PROVIDER=${prov//;/,}   # "tcp;ofi_rxm": libfabric's filter takes a list of names
fi

mkdir -p "$out/meson-logs"
out=$(cd "$out" && pwd)
results=$out/results.txt
: > "$results"
for set in $sets; do
  echo "=== fabtests: $set set over $prov (per-test timeout $tmo s)"
  # runfabtests' cleanup kills every fi_* process it sees: give it a PID namespace of its own,
  # and a /dev/shm of its own (a mount namespace comes with --mount-proc): providers' shared
  # memory files of processes in other PID namespaces are none of its business, nor its of
  # theirs.  No positional hosts (they make it ssh); -s/-c name this host.  It makes its
  # scratch files in the current directory: run it in $out.
  # A network namespace of its own too, where `ip` can bring its loopback up: its fixed ports
  # then never meet another run's.
  # complex (fi_ubertest) runs the verification config in util/fabtests-configs/ (messaging and
  # RMA, data checked) with at most 4 iov entries: ubertest 1.17 reads past its iov-count table
  # from 256 entries, and its weighted iov formats overshoot the message length from 6 entries
  # (16 bytes over 6 entries: 1+2+2+3+4+5 = 17), which a provider that sends what the list holds
  # reports as a length error.  See fi_ddtx(7), UPSTREAM FABTESTS.
  extra=()
  envs=()
  if [ "$set" = complex ]; then
    if [ "$prov" = ddtx ]; then
      extra=(-u "$DDTX_ROOT/util/fabtests-configs/ddtx-verify.test")
      envs=(FI_DDTX_IOV_LIMIT=4)
    else
      extra=(-u "$prefix/share/fabtests/test_configs/$prov/verify.test")
    fi
  fi
  netns=()
  command -v ip >/dev/null && netns=(--net)
  if [ -n "$hosts" ]; then
    # The same PID namespace (runfabtests' cleanup), in which hosts.sh makes the two hosts;
    # an "ssh" of our own first in PATH enters them.
    mkdir -p "$out/bin" && ln -sf "$DDTX_ROOT/util/hosts-ssh.sh" "$out/bin/ssh"
    (cd "$out" && env "${envs[@]}" PATH="$out/bin:$PATH" DDTX_HOSTS_SH="$DDTX_ROOT/util/hosts.sh" \
      DDTX_HOSTS_TAG=ddtx$$x \
      unshare --pid --fork --mount-proc --kill-child "$DDTX_ROOT/util/hosts.sh" run \
      "$prefix/bin/runfabtests.sh" -v -p "$prefix/bin" -T "$tmo" -t "$set" "${extra[@]}" \
      -s 127.1.0.2 -c 127.1.0.1 "$prov" B A) > "$out/$set.log" 2>&1
  else
  (cd "$out" && env "${envs[@]}" unshare --pid --fork --mount-proc --kill-child "${netns[@]}" \
    /bin/sh -c '{ ! command -v ip >/dev/null || ip link set lo up; } &&
    mount -t tmpfs -o mode=1777,size=50% tmpfs /dev/shm && exec "$@"' sh \
    "$prefix/bin/runfabtests.sh" -v -p "$prefix/bin" -T "$tmo" -t "$set" "${extra[@]}" \
    -s 127.0.0.1 -c 127.0.0.1 "$prov") > "$out/$set.log" 2>&1
  fi
  # The verbose YAML: "- name:   <test>" then "  result: <Pass|Fail|Notrun|Excluded>".
  awk -v set="$set" '
    /^- name: / { sub(/^- name: +/, ""); name = $0; next }
    /^  result: / && name != "" { sub(/^  result: +/, ""); print set "|" name "|" $0; name = "" }
  ' "$out/$set.log" >> "$results"
  grep -E "^# (Total|Passed|Notrun|Failed|Excluded)" "$out/$set.log" | tr '\n' ' '; echo
done

expected_list=util/fabtests-expected.txt
[ -n "$hosts" ] && expected_list=util/fabtests-hosts-expected.txt
python3 - "$results" "$out/meson-logs/testlog.json" "$prov" "$expected_list" "${hosts:+hosts-}" <<'PY'
import json, os, sys
results, testlog, prov, expected_path, tag = sys.argv[1:6]

def show_output(s, name, limit=60):
    """A failing test's lines of runfabtests' verbose log (its commands and both sides' output),
    so that a CI log says why."""
    try:
        path = os.path.join(os.path.dirname(results), s + ".log")
        lines = open(path, errors="replace").read().splitlines()
    except OSError:
        return
    start = None
    for i, l in enumerate(lines):
        if l.startswith("- name:") and l[len("- name:"):].strip() == name:
            start = i
    if start is None:
        return
    end = start + 1
    while end < len(lines) and not lines[end].startswith(("- name:", "# ---")):
        end += 1
    block = lines[start:end]
    if len(block) > limit:
        cut = ["    ... (%d lines)" % (len(block) - limit)]
        block = block[:limit // 2] + cut + block[-limit // 2:]
    for l in block:
        print("    | " + l)

expected = {}
if prov == "ddtx":
    for line in open(expected_path):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        f = [x.strip() for x in line.split("|")]
        if len(f) != 4 or f[2] not in ("notrun", "fail") or not f[3]:
            sys.exit("fabtests-expected.txt: bad line: " + line)
        expected[(f[0], f[1])] = (f[2], f[3])
table = {}
bad = 0
with open(testlog, "w") as log:
    for line in open(results):
        s, name, res = line.rstrip("\n").split("|", 2)
        kind = "pass" if res.startswith("Pass") else "fail" if res.startswith("Fail") else "notrun"
        t = table.setdefault(s, {"pass": 0, "fail": 0, "notrun": 0})
        t[kind] += 1
        exp = expected.get((s, name))
        if kind == "pass":
            meson = "OK"
            if exp:
                print("fabtests: %s / %s passes although listed as %s: update the list" % (s, name, exp[0]))
        elif exp:
            meson = "SKIP"
            if exp[0] != kind:
                print("fabtests: %s / %s: %s, listed as %s (%s)" % (s, name, kind, exp[0], exp[1]))
        else:
            meson = "FAIL" if prov == "ddtx" else "SKIP"
            if prov == "ddtx":
                bad += 1
                print("FAILED fabtests: %s / %s: %s (not in %s)" % (s, name, res, expected_path))
                show_output(s, name)
        log.write(json.dumps({"name": "ddtx:fabtests-%s%s / %s" % (tag, s, name), "result": meson}) + "\n")
print("fabtests over %s:  set  pass / fail / notrun" % prov)
for s, t in table.items():
    print("  %-12s %3d / %3d / %3d" % (s, t["pass"], t["fail"], t["notrun"]))
sys.exit(1 if bad else 0)
PY
