#!/usr/bin/env bash
# One-time set-up of a fresh Debian machine for running and testing the platform:
# Debian packages the tests and plugins use (redis-server for the BullMQ backend, Chromium for
# the browser job types, tesseract-ocr with English data for the ocr graph operation, tmux for the
# terminal client's tests, haproxy and tinyproxy for cluster-vpn's local driver), then the
# npm packages (lockfile-exact). Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
[ -x /usr/bin/chromium ] || missing+=(chromium)
command -v tesseract >/dev/null 2>&1 || missing+=(tesseract-ocr)   # the text plugin's ocr graph operation
ls /usr/share/tesseract-ocr/*/tessdata/eng.traineddata >/dev/null 2>&1 || missing+=(tesseract-ocr-eng)
command -v ca65 >/dev/null 2>&1 || missing+=(cc65)   # cross-checks the assembler in tests
command -v tmux >/dev/null 2>&1 || missing+=(tmux)   # the pseudo-terminal of the research client's tests
command -v haproxy >/dev/null 2>&1 || [ -x /usr/sbin/haproxy ] || missing+=(haproxy)   # cluster-vpn: bank frontends (local driver), haproxy -c
command -v tinyproxy >/dev/null 2>&1 || missing+=(tinyproxy)   # cluster-vpn: the local driver's worker proxies
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; else SUDO="sudo"; fi
  echo "setup: installing Debian packages: ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  echo "setup: installing npm packages"
  # `npm install`, not `npm ci`: with optional dependencies omitted (.npmrc: the CUDA/Vulkan
  # builds of llama.cpp), npm 11's `npm ci` refuses the lockfile for the other platforms'
  # optional packages; `npm install` installs exactly the locked versions and leaves it as is.
  npm install --no-audit --no-fund --loglevel=error
fi

# The compiled platform and CLI (dist/, oclif.manifest.json) that bin/platform.js runs; `npm
# install` builds them through `prepare`, this covers a checkout whose packages were present.
node scripts/build.mjs --if-stale
