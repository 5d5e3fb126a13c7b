#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Fuzzes the protocol decoder (tests/fuzz/fuzz_proto.c) with clang's libFuzzer under
# AddressSanitizer + UndefinedBehaviorSanitizer: installs clang-14 and libclang-rt-14-dev if
# missing, builds into ./build-fuzz and runs the fuzzer from the repository's corpus.
#   util/fuzz.sh [SECONDS] [libFuzzer options...]     (default 600 s; 0 = until a crash)
# New inputs go to build-fuzz/corpus/, crashes to build-fuzz/crashes/ (exit status non-zero).
# Keep a crash as a regression test by copying it into tests/fuzz/corpus/ (test fuzz_replay).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$DDTX_ROOT"

secs=${1:-600}
[ $# -gt 0 ] && shift
util/install-deps.sh --fuzz
if [ ! -f build-fuzz/build.ninja ]; then
  rm -rf build-fuzz
  CC=clang-14 meson setup build-fuzz -Dfuzz=enabled -Db_sanitize=address,undefined \
    -Db_lundef=false -Dwerror=false -Dverbs=disabled \
    -Dc_args=-fno-sanitize-recover=all -Dc_link_args=-fno-sanitize-recover=all >/dev/null
fi
meson compile -C build-fuzz tests/fuzz/fuzz_proto >/dev/null
mkdir -p build-fuzz/corpus build-fuzz/crashes
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export FI_LOG_LEVEL=${FI_LOG_LEVEL:-none}
echo "\$ build-fuzz/tests/fuzz/fuzz_proto -max_total_time=$secs build-fuzz/corpus tests/fuzz/corpus"
exec build-fuzz/tests/fuzz/fuzz_proto -max_total_time="$secs" -max_len=4096 -timeout=20 \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix=build-fuzz/crashes/ "$@" \
  build-fuzz/corpus tests/fuzz/corpus
