#!/usr/bin/env bash
# Debian packages the test suite drives for real: a broker, a browser, speech and media tools.
set -euo pipefail
packages=(mosquitto mosquitto-clients chromium espeak-ng sox ffmpeg socat python3 curl systemd)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "test dependencies present: ${packages[*]}"
