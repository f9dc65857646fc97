#!/usr/bin/env bash
# Debian packages the test suite drives for real: a broker and a clustered one (nats-server: MQTT 3.1.1 +
# JetStream, three nodes on loopback; the tests start it themselves), a browser, speech and media tools (flite and
# festival with three English voices: speakers the wake-word generator trains on), and MNN's GPU
# backends on the CPU: Vulkan through Mesa's lavapipe, OpenCL through pocl (a CPU-typed device MNN refuses), with
# the unversioned loader names MNN dlopens (libvulkan.so, libOpenCL.so come with the -dev packages). patchelf,
# lintian and shellcheck build and check the Debian packages (test/integration/debian-package.test.ts).
set -euo pipefail
packages=(mosquitto mosquitto-clients nats-server chromium espeak-ng sox ffmpeg socat python3 python3-jinja2 curl systemd
  flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts
  mesa-vulkan-drivers libvulkan-dev vulkan-tools pocl-opencl-icd ocl-icd-opencl-dev clinfo
  patchelf lintian shellcheck)
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
