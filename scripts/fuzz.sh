#!/usr/bin/env bash
# The fuzz targets in fuzz/ (cargo fuzz, libFuzzer, AddressSanitizer).
#
#   scripts/fuzz.sh smoke [SECONDS]        every target for SECONDS (default 5)
#                                          on its seeds; fails on any finding
#   scripts/fuzz.sh run TARGET [SECONDS] [JOBS]
#                                          one target for SECONDS (default 600),
#                                          or 10 million executions, whichever
#                                          comes first; prints its figures
#   scripts/fuzz.sh list                   the targets
#
# Seeds (fuzz/seeds/TARGET, written by scripts/fuzz-seeds.py from what
# redis-server 7.0 and real clients produce) and past crash inputs
# (fuzz/regressions/TARGET) are read, never written: what a run finds grows
# fuzz/corpus/TARGET (ignored by git). A crash lands in fuzz/artifacts/;
# once fixed, copy it into fuzz/regressions/TARGET so that every smoke run
# replays it. Dictionaries (fuzz/dicts/TARGET.dict: command words,
# directive names) are passed where one exists.
#
# Needs the nightly toolchain (and a C++ compiler for libFuzzer); without
# it the smoke run says so and fails (exit 0 only with FUZZ_OPTIONAL=1).
# The builds are cargo fuzz's; `cargo +nightly fuzz run TARGET` and
# `cargo fuzz coverage` work on the same targets.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

TARGETS=(request rdb_load restore aof_load aof_manifest cluster_msg repl_handshake
         lua_cjson lua_cmsgpack lua_struct hll compact config_file)
# Inputs past this length are not tried: the seeds above it are kept whole
# by their first 64 KiB.
MAX_LEN=65536

have_tools() {
  rustup toolchain list 2>/dev/null | grep -q '^nightly'
}

TRIPLE=x86_64-unknown-linux-gnu
# What `cargo fuzz build` passes: coverage for libFuzzer, AddressSanitizer,
# debug assertions (the keyspace's layout checks among them).
SANCOV="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address -Cdebug-assertions"
# `run` builds as cargo fuzz does (the release profile, one codegen unit);
# `smoke` with the quicker-to-build smoke profile.
PROFILE=release

build() {
  local blog flags="$SANCOV"
  [ "$PROFILE" = release ] && flags="$flags -Ccodegen-units=1"
  blog="$(mktemp)"
  if ! RUSTFLAGS="$flags" cargo +nightly build --profile "$PROFILE" --target $TRIPLE --bins >"$blog" 2>&1; then
    cat "$blog"
    rm -f "$blog"
    exit 1
  fi
  rm -f "$blog"
}

binary() {
  echo "target/$TRIPLE/$PROFILE/$1"
}

# The input folders and options of target $1.
inputs() {
  mkdir -p "corpus/$1" "regressions/$1"
  echo "corpus/$1 seeds/$1 regressions/$1"
  if [ -f "dicts/$1.dict" ]; then echo "-dict=dicts/$1.dict"; fi
}

case "${1:-}" in
  list)
    printf '%s\n' "${TARGETS[@]}"
    ;;
  smoke)
    secs="${2:-5}"
    PROFILE=smoke
    if ! have_tools; then
      echo "fuzz smoke: the nightly toolchain is missing"
      [ "${FUZZ_OPTIONAL:-0}" = 1 ] && exit 0
      exit 1
    fi
    build
    status=0
    for t in "${TARGETS[@]}"; do
      log="$(mktemp)"
      # shellcheck disable=SC2046
      if "$(binary "$t")" $(inputs "$t") -max_total_time="$secs" -seed=1 -max_len=$MAX_LEN \
           -timeout=10 -rss_limit_mb=4096 -artifact_prefix="artifacts/$t-" >"$log" 2>&1; then
        echo "fuzz smoke $t: ok, $(grep -Eo 'Done [0-9]+ runs' "$log" | tail -1 | cut -d' ' -f2) runs"
      else
        echo "fuzz smoke $t: FAILED"
        grep -E 'panicked|ERROR:|SUMMARY|Test unit written' "$log" | head -20
        status=1
      fi
      rm -f "$log"
    done
    exit $status
    ;;
  run)
    t="${2:?which target}"
    secs="${3:-600}"
    jobs="${4:-1}"
    build
    mkdir -p artifacts
    log="artifacts/$t.log"
    start=$(date +%s)
    rc=0
    # shellcheck disable=SC2046
    "$(binary "$t")" $(inputs "$t") -max_total_time="$secs" -runs=10000000 \
      -max_len=$MAX_LEN -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
      -artifact_prefix="artifacts/$t-" >"$log" 2>&1 || rc=$?
    end=$(date +%s)
    runs=$(grep -Eo 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -Eo '[0-9]+$' || echo ?)
    cov=$(grep -Eo 'cov: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    ft=$(grep -Eo 'ft: [0-9]+' "$log" | tail -1 | cut -d' ' -f2)
    echo "$t: rc=$rc seconds=$((end - start)) executions=$runs corpus=$(ls "corpus/$t" | wc -l) edges=$cov features=$ft"
    grep -E 'panicked|ERROR:|SUMMARY|Test unit written' "$log" | head -20 || true
    exit $rc
    ;;
  *)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
