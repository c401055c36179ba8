#!/usr/bin/env bash
# Installs what `make run`, `make lint` and `make test` need on a fresh
# Debian machine, only when it is missing. Safe to run again: it does
# nothing the second time.
#
#   ensure-deps.sh          Go
#   ensure-deps.sh speech   + the offline speech packages (scripts/speech-deps.sh)
#   ensure-deps.sh lint     + the speech packages (lint checks the
#                             speech_native build) and golangci-lint in ./bin
#   ensure-deps.sh sip      + the real SIP peers the SIP tests call
#                             (internal/sip/siptest): SIPp (Debian
#                             sip-tester, /usr/bin/sipp) and baresip
#                             (baresip-core, /usr/bin/baresip), and Kamailio
#                             (kamailio, /usr/sbin/kamailio: the proxy in
#                             front of several nodes, docs/kamailio/)
#   ensure-deps.sh test-js  + Node.js (Debian nodejs), for the web widget's
#                             JavaScript unit tests only: make run needs no Node
#   ensure-deps.sh test     + PostgreSQL, gcc, chromium (the browser
#                             tests), all of test-js's, sip's and lint's
set -euo pipefail

# golangci-lint for `make lint`: this exact version, built by `go install`
# with the Go toolchain in use (it must be as new as the module's Go).
golangci_lint_version="v2.15.0"

need_go="1.26"
if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "ensure-deps: Go $need_go or newer is required (https://go.dev/dl/); install it to /usr/local/go" >&2
  exit 1
fi

# Debian packages: what the tests and tools need: the PostgreSQL server the
# test suite runs against, gcc for the native speech build, the SIP peers
# and the offline speech engines (scripts/speech-deps.sh).
pkgs=()
if [ "${1:-}" = "test" ]; then
  command -v pg_ctlcluster >/dev/null 2>&1 || pkgs+=(postgresql)
  command -v psql >/dev/null 2>&1 || pkgs+=(postgresql-client)
  command -v gcc >/dev/null 2>&1 || pkgs+=(gcc libc6-dev)
  # The browser tests (widget, dashboard) drive Debian's chromium with chromedp
  # (../shared/research/deps.md §5).
  command -v chromium >/dev/null 2>&1 || pkgs+=(chromium)
  # The README's walkthrough, run as a test (cmd/switchboard TestREADME),
  # speaks to the API with curl and reads its answers with jq.
  command -v curl >/dev/null 2>&1 || pkgs+=(curl)
  command -v jq >/dev/null 2>&1 || pkgs+=(jq)
fi
if [ "${1:-}" = "test" ] || [ "${1:-}" = "test-js" ]; then
  command -v node >/dev/null 2>&1 || pkgs+=(nodejs)
fi
if [ "${1:-}" = "test" ] || [ "${1:-}" = "sip" ]; then
  # SIPp 3.6.1 and baresip 1.0.0 on bookworm (../shared/research/deps.md §4).
  # baresip-core carries the modules the tests load (g711, aufile, sndfile,
  # alsa as a null player), so no sound card or GUI package comes with it.
  command -v sipp >/dev/null 2>&1 || pkgs+=(sip-tester)
  command -v baresip >/dev/null 2>&1 || pkgs+=(baresip-core)
  # Kamailio 5.6 with its dispatcher module: TestSIPBehindKamailio runs
  # docs/kamailio/kamailio.cfg in front of two nodes. In /usr/sbin, which
  # is not on every user's PATH.
  [ -x /usr/sbin/kamailio ] || command -v kamailio >/dev/null 2>&1 || pkgs+=(kamailio)
fi
if [ ${#pkgs[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "ensure-deps: installing ${pkgs[*]}" >&2
  # Wait for another apt-get (a second checkout's make test) rather than fail on its lock.
  lock=(-o DPkg::Lock::Timeout=300)
  $SUDO apt-get "${lock[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get "${lock[@]}" install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
  # Debian starts the kamailio service it installs, on port 5060 of every
  # interface with its sample configuration: the tests run their own, and
  # 5060 is Switchboard's own SIP port. Stop it and keep it off.
  if [[ " ${pkgs[*]} " == *" kamailio "* ]] && command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now kamailio.service >/dev/null 2>&1 || true
  fi
fi

case "${1:-}" in
test | speech | lint) "$(dirname "$0")/speech-deps.sh" ;;
esac

if [ "${1:-}" = "test" ] || [ "${1:-}" = "lint" ]; then
  bin="$(cd "$(dirname "$0")/.." && pwd)/bin"
  have="$("$bin/golangci-lint" version --short 2>/dev/null || true)"
  built="$(go version "$bin/golangci-lint" 2>/dev/null | awk '{print $2}' || true)"
  if [ "v$have" != "$golangci_lint_version" ] || [ "$built" != "$(go env GOVERSION)" ]; then
    echo "ensure-deps: installing golangci-lint $golangci_lint_version into bin/ (go install, $(go env GOVERSION))" >&2
    GOBIN="$bin" go install "github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$golangci_lint_version"
  fi
fi
