#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Installs what is missing (Debian 12), builds ddtx into ./build and runs the whole test suite;
# then builds it again with AddressSanitizer into ./build-asan and runs the suite there, and with
# ThreadSanitizer into ./build-tsan for the tests that run several threads (the plain build runs
# the functional suite a second and third time over the ofi wire, meson suite "ofi", on the tcp
# and shm core providers, about 6 minutes; the sanitizer builds leave that suite out), and fuzzes the
# protocol decoder for 60 s (util/fuzz.sh, clang's libFuzzer) when clang installs, and runs
# upstream fabtests' unit, functional, standard, short and complex sets over ddtx (util/fabtests.sh: each
# fabtests test one result, expected notruns from util/fabtests-expected.txt counted as skipped),
# and the unit and functional sets between two hosts over the ofi wire (util/fabtests.sh -H,
# util/fabtests-hosts-expected.txt).
# The last line printed is always "<passed> passed, <failed> failed", counting each test once:
# a test fails if it failed in either build; a build that does not compile counts as a failure.
#   util/run-tests.sh [--no-asan] [--no-tsan] [--no-fuzz] [--no-fabtests]
#     (or DDTX_ASAN=0, DDTX_TSAN=0, DDTX_FUZZ=0, DDTX_FABTESTS=0; DDTX_FUZZ_SECS=60)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

asan=${DDTX_ASAN:-1}
tsan=${DDTX_TSAN:-1}
fuzz=${DDTX_FUZZ:-1}
fuzz_secs=${DDTX_FUZZ_SECS:-60}
fabtests=${DDTX_FABTESTS:-1}
for arg in "$@"; do
  case $arg in
    --no-asan) asan=0 ;;
    --asan) asan=1 ;;
    --no-tsan) tsan=0 ;;
    --tsan) tsan=1 ;;
    --no-fuzz) fuzz=0 ;;
    --no-fabtests) fabtests=0 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "run-tests.sh: unknown argument $arg" >&2; exit 2 ;;
  esac
done

if ! util/install-deps.sh; then
  echo "run-tests.sh: installing dependencies failed"
  echo "0 passed, 1 failed"
  exit 1
fi

builds=()        # build directories whose testlog.json is counted
broken=()        # builds that did not configure or compile

only_tests=()    # test names for the next run_suite (empty: all)
test_opts=()     # more meson test options for the next run_suite
run_suite() {    # run_suite DIR TIMEOUT_MULTIPLIER [meson options...]
  local dir=$1 mult=$2
  shift 2
  echo "=== $dir: configure and build"
  if ! ddtx_build "$dir" "$@"; then
    echo "=== $dir: BUILD FAILED"
    broken+=("$dir")
    return
  fi
  echo "=== $dir: meson test"
  rm -f "$dir/meson-logs/testlog.json"
  meson test -C "$dir" --print-errorlogs --timeout-multiplier "$mult" "${test_opts[@]}" \
    "${only_tests[@]}"
  builds+=("$dir")
}

start=$(date +%s)
# The verbs wire must compile (warnings as errors) wherever rdma-core is: enabled, not auto.
run_suite build 1 -Dverbs=enabled -Dmlx5dv=enabled
if [ "$asan" = 1 ]; then
  # Leak checking stays on; abort on the first error so the test reports it.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:halt_on_error=1:print_summary=1:detect_leaks=1}
  # The ofi suite repeats the functional suite over another wire: once, in the plain build.
  test_opts=(--no-suite ofi)
  run_suite build-asan 4 -Db_sanitize=address -Db_lundef=false
  test_opts=()
fi
if [ "$tsan" = 1 ]; then
  # The tests where threads share provider state: the registration and pool-refill threads,
  # the memory monitor's handler, FI_THREAD_SAFE endpoints used from several threads.
  export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
  only_tests=(layout regcache_concurrent regcache_invalidate objects-thread_safe
              objects-thread_safe_rma objects-thread_domain engine-threads engine-pack_to_zcopy
              engine-umr_caches engine-umr_pool_pressure engine-reuse_after_free_send_auto)
  run_suite build-tsan 6 -Db_sanitize=thread -Db_lundef=false
  only_tests=()
fi
if [ "$fuzz" = 1 ]; then
  # The protocol fuzzer for a bounded time (util/fuzz.sh), when clang and libFuzzer install;
  # counted as one test, written where the summary below reads test results.
  echo "=== build-fuzz: libFuzzer on the protocol decoder, ${fuzz_secs} s"
  if util/install-deps.sh --fuzz >/dev/null 2>&1; then
    # The log lives outside build-fuzz/: fuzz.sh recreates that directory on a first run.
    log=build/fuzz.log
    mkdir -p build
    if util/fuzz.sh "$fuzz_secs" > "$log" 2>&1; then res=OK; else res=FAIL; fi
    grep -E "^(Done|stat::number_of_executed_units|stat::average_exec_per_sec|==.*ERROR|SUMMARY)" \
      "$log" || tail -20 "$log"
    mkdir -p build-fuzz/meson-logs
    echo "{\"name\": \"ddtx:fuzz / fuzz_proto_${fuzz_secs}s\", \"result\": \"$res\"}" \
      > build-fuzz/meson-logs/testlog.json
    builds+=(build-fuzz)
  else
    echo "=== build-fuzz: clang-14 / libclang-rt-14-dev not installable here: fuzzing skipped"
  fi
fi
if [ "$fabtests" = 1 ] && [[ " ${builds[*]} " == *" build "* ]]; then
  # Upstream fabtests over the provider in ./build (util/fabtests.sh writes a testlog.json of
  # its own: one result per fabtests test).
  util/fabtests.sh -b build -o build-fabtests
  [ -f build-fabtests/meson-logs/testlog.json ] && builds+=(build-fabtests)
  # ...and between two hosts (util/hosts.sh namespaces, ddtx over the ofi wire): the unit and
  # functional sets, about 3.5 minutes (standard and short take 20+ minutes there, the ofi
  # wire's pingpongs being slow: run by hand, `util/fabtests.sh -H`).  Names its results
  # ddtx:fabtests-hosts-<set> / <test>.
  util/fabtests.sh -H -t "unit functional" -b build -o build-fabtests-hosts
  [ -f build-fabtests-hosts/meson-logs/testlog.json ] && builds+=(build-fabtests-hosts)
fi
echo "=== elapsed $(( $(date +%s) - start )) s"

python3 - "${#broken[@]}" "${builds[@]}" <<'PY'
import json, os, sys
broken = int(sys.argv[1])
passed_kinds = {"OK", "EXPECTEDFAIL"}
tests = {}
for d in sys.argv[2:]:
    path = os.path.join(d, "meson-logs", "testlog.json")
    counts = {}
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                t = json.loads(line)
                res = t.get("result", "ERROR")
                counts[res] = counts.get(res, 0) + 1
                key = t.get("name", "?")   # "project:suite / test"
                tests.setdefault(key, []).append((d, res))
    print("%s: %s" % (d, ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())) or "no tests"))
passed = failed = skipped = 0
for key, runs in sorted(tests.items()):
    res = [r for _, r in runs]
    if any(r not in passed_kinds and r != "SKIP" for r in res):
        failed += 1
        print("FAILED: %s (%s)" % (key, ", ".join("%s in %s" % (r, d) for d, r in runs)))
    elif any(r in passed_kinds for r in res):
        passed += 1
    else:
        skipped += 1
print("%d skipped" % skipped)
print("%d passed, %d failed" % (passed, failed + broken))
sys.exit(1 if failed + broken else 0)
PY
