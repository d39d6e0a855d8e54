#!/usr/bin/env bash
# Builds ferrokv in release mode and runs the side-by-side benchmark against
# redis-server (see bench-vs-redis.py for options).
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
exec python3 scripts/bench-vs-redis.py "$@"
