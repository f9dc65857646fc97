#!/usr/bin/env bash
# What the Debian packages (npm run package:deb) and the system tier (npm run test:system) need on an x86-64
# Debian machine: dpkg-deb, lintian and patchelf to build and check the packages; mmdebstrap, QEMU user mode with
# binfmt (the arm64 image's packages are configured under it), QEMU's system emulator and qemu-img (the tier boots
# the image on a copy-on-write overlay) and mkfs.ext4 -d to build and boot the arm64 image. Idempotent, run as root;
# anything it cannot do is one line and exit 1.
set -euo pipefail
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
fail() {
  echo "install-system-deps: $*" >&2
  exit 1
}
export DEBIAN_FRONTEND=noninteractive
packages=(dpkg-dev lintian shellcheck patchelf mmdebstrap arch-test qemu-user-static binfmt-support qemu-system-arm
  qemu-utils e2fsprogs)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq || fail "apt-get update failed"
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null ||
    fail "apt-get install failed for: ${missing[*]}"
fi
# binfmt: containers often have binfmt_misc unmounted; mmdebstrap runs the arm64 maintainer scripts through it.
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  $SUDO mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc 2>/dev/null ||
    fail "binfmt_misc is not mounted and cannot be: the arm64 image cannot be built on this machine"
fi
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] || $SUDO update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || true
grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 ||
  fail "binfmt handler qemu-aarch64 is not enabled (update-binfmts --enable qemu-aarch64 failed)"
echo "system dependencies present: ${packages[*]}; binfmt qemu-aarch64 on"
