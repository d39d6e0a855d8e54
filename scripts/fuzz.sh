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
#   scripts/fuzz.sh coverage TARGET        line coverage of the target's door
#                                          over its corpus, seeds, regressions
#   scripts/fuzz.sh rustflags              the flags the builds take
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
# `run` builds with the fuzz profile (optimized, one codegen unit, as
# cargo fuzz builds); `smoke` with the quicker-to-build smoke profile,
# which scripts/asan.sh unit shares. Both are in the workspace's
# Cargo.toml; the builds land in its target directory.
PROFILE=fuzz
# Features are unified over the whole workspace (fuzz targets, the server's
# tests): every build picks the same dependency builds, so the smoke build
# and scripts/asan.sh unit share theirs.
export CARGO_UNSTABLE_FEATURE_UNIFICATION=true CARGO_RESOLVER_FEATURE_UNIFICATION=workspace

build() {
  local blog
  blog="$(mktemp)"
  if ! RUSTFLAGS="$SANCOV" cargo +nightly build --profile "$PROFILE" --target $TRIPLE \
       -p ferrokv-fuzz --bins >"$blog" 2>&1; then
    cat "$blog"
    rm -f "$blog"
    exit 1
  fi
  rm -f "$blog"
}

binary() {
  echo "${CARGO_TARGET_DIR:-../target}/$TRIPLE/$PROFILE/$1"
}

# The input folders and options of target $1.
inputs() {
  # artifacts/ is ignored by git, so a fresh clone lacks it; libFuzzer
  # refuses to start without the folder its -artifact_prefix names.
  mkdir -p "corpus/$1" "regressions/$1" artifacts
  echo "corpus/$1 seeds/$1 regressions/$1"
  if [ -f "dicts/$1.dict" ]; then echo "-dict=dicts/$1.dict"; fi
}

# The door each target exercises: the files whose line coverage
# `coverage` reports.
door_files() {
  case "$1" in
    request) echo src/net/request.rs ;;
    rdb_load|restore) echo src/persist/rdb/load.rs src/persist/rdb/stream.rs src/persist/rdb/listpack.rs ;;
    aof_load|aof_manifest) echo src/persist/aof_load.rs ;;
    cluster_msg) echo src/server/cluster/msg.rs ;;
    repl_handshake) echo src/net/master_link.rs ;;
    lua_cjson) echo src/script/lib/cjson.rs src/script/lib/json_decode.rs ;;
    lua_cmsgpack) echo src/script/lib/cmsgpack.rs ;;
    lua_struct) echo src/script/lib/structlib.rs ;;
    hll) echo src/store/hll.rs ;;
    compact) echo src/persist/rdb/compact.rs src/persist/rdb/listpack.rs src/store/intset.rs src/store/listpack.rs ;;
    config_file) echo src/config/file.rs src/config/value.rs ;;
  esac
}

case "${1:-}" in
  rustflags)
    # For scripts/asan.sh unit, which builds with the same flags.
    echo "$SANCOV"
    ;;
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
  coverage)
    # Replays the corpus, seeds and regressions of a target under
    # -Cinstrument-coverage (cargo fuzz coverage) and reports the line
    # coverage of the files of its door.
    t="${2:?which target}"
    mkdir -p "corpus/$t" "regressions/$t"
    log="$(mktemp)"
    if ! cargo +nightly fuzz coverage "$t" "corpus/$t" "seeds/$t" "regressions/$t" >"$log" 2>&1; then
      tail -30 "$log"
      rm -f "$log"
      exit 1
    fi
    rm -f "$log"
    # cargo fuzz coverage builds into fuzz/target/TRIPLE/coverage.
    bin="target/$TRIPLE/coverage/$TRIPLE/release/$t"
    llvm_cov="$(rustc +nightly --print sysroot)/lib/rustlib/$TRIPLE/bin/llvm-cov"
    files=()
    for f in $(door_files "$t"); do files+=("../$f"); done
    "$llvm_cov" report "$bin" -instr-profile="coverage/$t/coverage.profdata" "${files[@]}"
    ;;
  *)
    sed -n '2,20p' "$0"
    exit 2
    ;;
esac
