# Shared by util/demo.sh, util/run-tests.sh and util/bench.sh; source it, do not run it.

# Repository root (this file lives in util/).
DDTX_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# ddtx_build DIR [meson options...]: configure DIR once (again only if it is not a usable build
# directory), then build it.  Returns non-zero if configuring or building fails.
ddtx_build() {
  local dir=$1
  shift
  if [ ! -f "$dir/build.ninja" ]; then
    rm -rf "$dir"
    meson setup "$dir" "$DDTX_ROOT" "$@" || return 1
  fi
  meson compile -C "$dir" || return 1
}
