#!/usr/bin/env bash
# ferrokv under AddressSanitizer (nightly's -Zsanitizer=address). The build
# allocates through the system allocator, which ASan checks, counting bytes
# for INFO and maxmemory as jemalloc would (src/util/counting_alloc.rs).
#
#   scripts/asan.sh unit [FILTER]     the library's unit tests: the keyspace's
#                                     encodings, the protocol, persistence
#   scripts/asan.sh it [FILTER]       the integration tests (their servers run
#                                     in the test process and as the ASan
#                                     ferrokv binary)
#   scripts/asan.sh suite [UNIT...]   Redis's suite against the ASan binary:
#                                     the units given, or those CI runs
#                                     (.ci/redis-suite-units)
#   scripts/asan.sh all               unit, it and suite
#
# Any ASan report fails the run: reports from server processes are written
# under target/asan/reports and listed at the end. Leak checking is on for
# the unit tests; servers run with it off (a process killed by the suite
# or stopped by a signal leaks by design).
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET=x86_64-unknown-linux-gnu
# The unit tests build where the fuzz targets do (the workspace's target
# directory, or the caller's CARGO_TARGET_DIR); the rest in target/asan.
SHARED_TARGET="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TARGET_DIR="$PWD/target/asan"
export RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes"
# Build scripts and proc macros are built for the host without the flag,
# which is why the target is named.
CARGO=(cargo +nightly)
if ! rustup toolchain list 2>/dev/null | grep -q '^nightly'; then
  # A stable toolchain takes -Z flags when told it is bootstrapping.
  CARGO=(cargo)
  export RUSTC_BOOTSTRAP=1
fi
REPORTS="$CARGO_TARGET_DIR/reports"
SERVER_ASAN="detect_leaks=0:abort_on_error=1:log_path=$REPORTS/asan"

check_reports() {
  if compgen -G "$REPORTS/asan*" >/dev/null; then
    echo "AddressSanitizer reports:"
    for f in "$REPORTS"/asan*; do
      echo "== $f"
      head -40 "$f"
    done
    return 1
  fi
  echo "no AddressSanitizer report"
}

unit() {
  # Built as the fuzz smoke builds (the same flags, profile and target
  # directory: AddressSanitizer, debug assertions, libFuzzer's coverage
  # hooks, which the sanitizer runtime answers), so that CI builds the
  # dependencies once for both.
  CARGO_UNSTABLE_FEATURE_UNIFICATION=true CARGO_RESOLVER_FEATURE_UNIFICATION=workspace \
    ASAN_OPTIONS="detect_leaks=1:abort_on_error=1" RUSTFLAGS="$(scripts/fuzz.sh rustflags)" \
    CARGO_TARGET_DIR="$SHARED_TARGET" \
    "${CARGO[@]}" test --profile smoke --target $TARGET -p ferrokv --lib -- ${1:+"$1"}
}

it() {
  # Servers spawned as processes report to files; the test process
  # itself aborts on a report, failing the run.
  mkdir -p "$REPORTS"
  ASAN_OPTIONS="$SERVER_ASAN" "${CARGO[@]}" test --target $TARGET --test it -- ${1:+"$1"}
  check_reports
}

suite() {
  local units=("$@")
  if [ ${#units[@]} -eq 0 ]; then
    mapfile -t units < <(grep -v '^#' .ci/redis-suite-units | grep -v '^$')
  fi
  "${CARGO[@]}" build --release --target $TARGET --bin ferrokv
  mkdir -p "$REPORTS"
  local status=0
  ASAN_OPTIONS="$SERVER_ASAN" bash ../shared/tools/redis-suite.sh -o "$CARGO_TARGET_DIR/suite" \
    "$CARGO_TARGET_DIR/$TARGET/release/ferrokv" "${units[@]}" || status=$?
  cat "$CARGO_TARGET_DIR/suite/table.txt" 2>/dev/null | tail -5 || true
  check_reports || status=1
  return $status
}

rm -rf "$REPORTS"
case "${1:-}" in
  unit) unit "${2:-}" ;;
  it) it "${2:-}" ;;
  suite) shift; suite "$@" ;;
  all) unit && it && suite ;;
  *) sed -n '2,20p' "$0"; exit 2 ;;
esac
