#!/usr/bin/env bash
# What the Debian packages (npm run package:deb) and the system tier (npm run test:system) need on an x86-64
# Debian machine: dpkg-deb, lintian and patchelf to build and check the packages; mmdebstrap, QEMU user mode with
# binfmt (the arm64 image's packages are configured under it), QEMU's system emulator and qemu-img (the tier boots
# the image on a copy-on-write overlay) and mkfs.ext4 -d to build and boot the arm64 image. Idempotent, run as root;
# anything it cannot do is one line and exit 1.
set -euo pipefail
DEPS_NAME=install-system-deps
# shellcheck source=scripts/deps-common.sh
. "$(dirname "$0")/deps-common.sh"
packages=(dpkg-dev lintian shellcheck patchelf mmdebstrap arch-test qemu-user-static binfmt-support qemu-system-arm
  qemu-utils e2fsprogs)
apt_install_missing "${packages[@]}"
# binfmt: containers often have binfmt_misc unmounted; mmdebstrap runs the arm64 maintainer scripts through it.
binfmt_mount ": the arm64 image cannot be built on this machine"
binfmt_enable aarch64
grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64 ||
  fail "binfmt handler qemu-aarch64 is not enabled (update-binfmts --enable qemu-aarch64 failed)"
echo "system dependencies present: ${packages[*]}; binfmt qemu-aarch64 on"
