#!/usr/bin/env bash
# Installs the Debian packages of the offline speech engines
# (internal/speech/local), only when they are missing:
#   espeak-ng             the TTS program the default (pure-Go) build runs
#   libespeak-ng-dev      espeak-ng C API, for -tags speech_native
#   libpocketsphinx-dev   pocketsphinx 5prealpha + sphinxbase, for -tags speech_native
#   pocketsphinx-en-us    the en-us acoustic model, LM and dictionary
#   pkg-config            cgo finds the libraries through it
#   gcc, libc6-dev        cgo's compiler
#   sox                   inspecting and converting test audio by hand
# Silent when everything is present, and then it needs no root.
# Safe to run again: it does nothing the second time.
#
#   speech-deps.sh                install what is missing, or fail (make test, CI)
#   speech-deps.sh --if-possible  install what is missing when this machine
#                                 can (root or password-less sudo, apt-get);
#                                 otherwise say what is missing and succeed (make run)
#   speech-deps.sh --native       succeed when a -tags speech_native build can
#                                 compile here (cgo compiler, pkg-config, the
#                                 libraries); otherwise say what is missing and fail
set -euo pipefail

mode="${1:-}"

if [ "$mode" = "--native" ]; then
  why=()
  command -v gcc >/dev/null 2>&1 || why+=("no gcc")
  if ! command -v pkg-config >/dev/null 2>&1; then
    why+=("no pkg-config")
  elif ! pkg-config --exists espeak-ng pocketsphinx sphinxbase 2>/dev/null; then
    why+=("pkg-config finds no espeak-ng/pocketsphinx/sphinxbase (libespeak-ng-dev, libpocketsphinx-dev)")
  fi
  [ ${#why[@]} -eq 0 ] && exit 0
  echo "speech-deps: no native speech build here: $(IFS=';'; echo "${why[*]}")" >&2
  exit 1
fi

want=(espeak-ng libespeak-ng-dev libpocketsphinx-dev pocketsphinx-en-us pkg-config gcc libc6-dev sox)

missing=()
for p in "${want[@]}"; do
  # dpkg-query prints "install ok installed" for a package that is fully set up.
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

# cannot explains why nothing gets installed: fatal by default, a note
# with --if-possible.
cannot() {
  if [ "$mode" = "--if-possible" ]; then
    echo "speech-deps: not installing ${missing[*]}: $1; continuing without them" >&2
    exit 0
  fi
  echo "speech-deps: missing ${missing[*]}; $1" >&2
  exit 1
}

command -v apt-get >/dev/null 2>&1 || cannot "no apt-get on this machine"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || cannot "run as root or install sudo"
  if [ "$mode" = "--if-possible" ]; then
    sudo -n true 2>/dev/null || cannot "sudo needs a password (run: sudo $0)"
    SUDO="sudo -n"
  else
    SUDO="sudo"
  fi
fi
echo "speech-deps: installing ${missing[*]}" >&2
if ! { $SUDO apt-get update -qq &&
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
  cannot "apt-get failed"
fi
