#!/usr/bin/env bash
# Installs what `make run` and `make test` need on a fresh Debian machine,
# only when it is missing. Safe to run again: it does nothing the second time.
set -euo pipefail

need_go="1.26"
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "ensure-deps: Go $need_go or newer is required (https://go.dev/dl/); install it to /usr/local/go" >&2
  exit 1
fi

# Debian packages: what the tests and tools need: the PostgreSQL server the
# test suite runs against, gcc for the native speech build, and the offline
# speech engines (scripts/speech-deps.sh).
pkgs=()
if [ "${1:-}" = "test" ]; then
  command -v pg_ctlcluster >/dev/null 2>&1 || pkgs+=(postgresql)
  command -v psql >/dev/null 2>&1 || pkgs+=(postgresql-client)
  command -v gcc >/dev/null 2>&1 || pkgs+=(gcc libc6-dev)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "ensure-deps: installing ${pkgs[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
fi

if [ "${1:-}" = "test" ] || [ "${1:-}" = "speech" ]; then
  "$(dirname "$0")/speech-deps.sh"
fi
