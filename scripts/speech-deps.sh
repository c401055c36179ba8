#!/usr/bin/env bash
# Installs the Debian packages of the offline speech engines
# (internal/speech/local), only when they are missing:
#   espeak-ng             the TTS program the default (pure-Go) build runs
#   libespeak-ng-dev      espeak-ng C API, for -tags speech_native
#   libpocketsphinx-dev   pocketsphinx 5prealpha + sphinxbase, for -tags speech_native
#   pocketsphinx-en-us    the en-us acoustic model, LM and dictionary
#   pkg-config            cgo finds the libraries through it
#   sox                   inspecting and converting test audio by hand
# Silent when everything is present, and then it needs no root.
# Safe to run again: it does nothing the second time.
set -euo pipefail

want=(espeak-ng libespeak-ng-dev libpocketsphinx-dev pocketsphinx-en-us pkg-config sox)

missing=()
for p in "${want[@]}"; do
  # dpkg-query prints "install ok installed" for a package that is fully set up.
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo >/dev/null 2>&1; then
    echo "speech-deps: missing ${missing[*]}; run as root or install sudo" >&2
    exit 1
  fi
  SUDO="sudo"
fi
echo "speech-deps: installing ${missing[*]}" >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
