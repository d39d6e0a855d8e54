#!/usr/bin/env bash
# ferrokv's own tests again with I/O threads: every server the tests start runs with
# `io-threads 4` and `io-threads-do-reads yes`, the threads serving whenever there is
# work for them (FERROKV_IO_THREADS_ALWAYS=1; without it they serve only where they
# pay off). With no argument: the differential, property and connection tests (.ci/run);
# with arguments: cargo test filters for the `it` suite (`all` for every test).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = all ]; then
  filters=()
elif [ $# -gt 0 ]; then
  filters=("$@")
else
  filters=(oracle:: string_random:: types_random:: unordered:: protocol:: pubsub:: multi::
           watch:: list_blocking:: zset_blocking:: tracking:: connection:: obuf::
           client_eviction:: io_threads:: tls:: replication::)
fi
FERROKV_TEST_IO_THREADS=4 FERROKV_IO_THREADS_ALWAYS=1 cargo test --test it -- "${filters[@]}"
