#!/usr/bin/env bash
# The README's test command: installs on a fresh Debian machine what the
# tests need (redis-server and redis-tools for the differential tests, tcl
# for Redis's own suite, OpenSSL for TLS, Python, node and npm for the
# framework tests, iproute2's ss), then runs `cargo test`. Arguments go to
# cargo test.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 \
   || ! command -v tclsh >/dev/null 2>&1 || ! command -v ss >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # iproute2's ss shows listening sockets' backlog (tests/it/config.rs).
  apt-get install -y -qq redis-server redis-tools tcl iproute2 >/dev/null
fi
# A packaged redis-server may have started itself on 6379; tests use their
# own free ports, so it is harmless, but stop it to keep the machine quiet.
if command -v service >/dev/null 2>&1; then service redis-server stop >/dev/null 2>&1 || true; fi

# TLS: the openssl crate builds against the system OpenSSL (libssl-dev,
# found by pkg-config); tests/it/tls.rs makes its certificates with the
# openssl command.
if ! pkg-config --exists openssl 2>/dev/null || ! command -v openssl >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq libssl-dev pkg-config openssl >/dev/null
fi

# The framework tests (tests/it/frameworks.rs) install rq into a Python
# virtualenv and bullmq into an npm project: they need python3 with venv
# and pip, node and npm.
missing=()
if ! command -v python3 >/dev/null 2>&1; then
  missing+=(python3 python3-venv python3-pip)
elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  missing+=(python3-venv python3-pip)
fi
if ! command -v node >/dev/null 2>&1; then missing+=(nodejs); fi
if ! command -v npm >/dev/null 2>&1; then missing+=(npm); fi
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi

redis-server --version
python3 --version
node --version
npm --version
cargo --version

cargo test "$@"
