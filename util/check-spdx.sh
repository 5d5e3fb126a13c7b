#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Every source, build and script file git tracks names its licence (BSD-2-Clause, as meson.build
# and LICENSE say) in an SPDX line near its top.  Prints the files that do not; fails if any.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
command -v git >/dev/null && [ -e .git ] || { echo "not a git checkout: skipped"; exit 77; }
missing=0
while IFS= read -r f; do
  case $f in
    *.c|*.h|*.cu|*.py|*.sh|*meson.build|meson_options.txt|.ci/run) ;;
    util/*) [[ $f == *.* ]] && continue ;;
    *) continue ;;
  esac
  [ -f "$f" ] || continue
  if ! head -5 "$f" | grep -q 'SPDX-License-Identifier: BSD-2-Clause'; then
    echo "no SPDX line: $f"
    missing=$((missing + 1))
  fi
done < <(git ls-files)
echo "SPDX: $missing file(s) without a licence line"
[ "$missing" -eq 0 ]
