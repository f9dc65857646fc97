#!/usr/bin/env bash
# Builds the arm64 Debian 12 system image the system tier boots (scripts/test-system.ts), from Debian's own
# packages, and caches it by its inputs: the first build runs dpkg and the kernel's initramfs under QEMU user mode
# and takes an hour or more on a 2-core machine, so CI must never rebuild it when nothing it is made of changed.
#
#   scripts/system-image/build-image.sh            build (if not cached) and print the cache dir
#   scripts/system-image/build-image.sh --key      print the cache key only
#   scripts/system-image/build-image.sh --dir      print the cache dir only (it may not exist yet)
#
# The key hashes this script (it holds the package list and every hook), the suite, the architecture and the
# mirror. The image holds no mnn-edge: the tier installs the .deb under test at first boot from a second disk
# (see the mnn-edge-test-debs unit below), so a new agent never invalidates the image.
# Cache: $MNN_EDGE_SYSTEM_CACHE, default /var/cache/mnn-edge-system/<key>/ (machine-level, outside any checkout):
#   rootfs.ext4  vmlinuz  initrd.img  manifest.json  build.log
set -euo pipefail

SUITE=bookworm
ARCH=arm64
MIRROR=${MNN_EDGE_DEBIAN_MIRROR:-http://deb.debian.org/debian}
CACHE_ROOT=${MNN_EDGE_SYSTEM_CACHE:-/var/cache/mnn-edge-system}
DISK_SIZE=4G
# systemd as PID 1 with udev and journald; Debian's generic arm64 kernel; what the agent's unit and package need
# (ca-certificates for hub/OTA downloads, adduser for postinst, the Vulkan and OpenCL loaders the engine dlopens);
# sqlite3 for PRAGMA integrity_check after power cuts; qemu-guest-agent is how the host runs commands in the guest
# (guest-exec over virtio-serial: no ssh keys, no network dependency).
PACKAGES=(systemd systemd-sysv udev dbus linux-image-arm64 ca-certificates sqlite3 adduser iproute2 netbase curl
  procps kmod libvulkan1 ocl-icd-libopencl1 qemu-guest-agent)

self="$(readlink -f "${BASH_SOURCE[0]}")"
key="$( { sha256sum <"$self"; echo "$SUITE $ARCH $MIRROR ${PACKAGES[*]}"; } | sha256sum | cut -c1-16)"
dir="$CACHE_ROOT/$SUITE-$ARCH-$key"
case "${1:-}" in
  --key) echo "$key"; exit 0 ;;
  --dir) echo "$dir"; exit 0 ;;
  "") ;;
  *) echo "usage: $0 [--key|--dir]" >&2; exit 2 ;;
esac
if [ -f "$dir/manifest.json" ]; then echo "$dir"; exit 0; fi

for tool in mmdebstrap mkfs.ext4; do
  command -v "$tool" >/dev/null || { echo "$tool missing: run scripts/install-system-deps.sh" >&2; exit 1; }
done
if [ "$(uname -m)" != aarch64 ] && ! grep -qs '^enabled' /proc/sys/fs/binfmt_misc/qemu-aarch64; then
  echo "binfmt for qemu-aarch64 is not enabled: run scripts/install-system-deps.sh" >&2
  exit 1
fi

mkdir -p "$CACHE_ROOT"
work="$dir.partial"
rm -rf "$work"
mkdir -p "$work"
started=$(date +%s)
echo "building $dir (log: $work/build.log)" >&2

# Hooks run on the host with the root directory as $1.
# setup: before any package, so the kernel's first initramfs already uses it. MODULES=list with the virtio and ext4
#   modules instead of Debian's "most": most of the build's time is mkinitramfs copying hundreds of modules, one
#   emulated process each; -M virt needs only these (PCI host and virtio-mmio are built in).
# customize: a bootable system for -kernel/-initrd: fstab, DHCP on the user-mode NIC (systemd-networkd), root with
#   no password on the serial console, and the unit that installs the .deb(s) under test from a disk labelled
#   MNNDEBS at boot (not ordered before mnn-edge.service: postinst starts that unit and waits for it, so an
#   ordering would deadlock).
# shellcheck disable=SC2016 # the hooks expand $1 in mmdebstrap's shell, not here
mmdebstrap --variant=minbase --arch="$ARCH" --include="$(IFS=,; echo "${PACKAGES[*]}")" \
  --setup-hook='mkdir -p "$1/etc/initramfs-tools/conf.d" "$1/usr/share/initramfs-tools/modules.d"
    printf "MODULES=list\n" >"$1/etc/initramfs-tools/conf.d/mnn-edge-qemu"
    printf "%s\n" virtio_pci virtio_mmio virtio_blk virtio_net virtio_console virtio_rng ext4 crc32c_generic \
      >"$1/usr/share/initramfs-tools/modules.d/mnn-edge-qemu"' \
  --customize-hook='printf "/dev/vda / ext4 defaults,errors=remount-ro 0 1\n" >"$1/etc/fstab"
    echo mnn-edge-qemu >"$1/etc/hostname"
    printf "127.0.1.1 mnn-edge-qemu\n" >>"$1/etc/hosts"
    mkdir -p "$1/etc/systemd/network"
    printf "[Match]\nName=en* eth*\n[Network]\nDHCP=yes\n" >"$1/etc/systemd/network/20-wired.network"
    chroot "$1" systemctl enable systemd-networkd
    chroot "$1" passwd -d root
    printf "[Unit]\nDescription=Install the mnn-edge packages under test (disk MNNDEBS)\nConditionPathExists=/dev/disk/by-label/MNNDEBS\nAfter=local-fs.target systemd-udev-settle.service\nWants=systemd-udev-settle.service\nBefore=multi-user.target\n[Service]\nType=oneshot\nRemainAfterExit=yes\nExecStart=/usr/local/sbin/mnn-edge-test-debs\n[Install]\nWantedBy=multi-user.target\n" \
      >"$1/etc/systemd/system/mnn-edge-test-debs.service"
    printf "#!/bin/sh\nset -e\nmkdir -p /run/mnn-edge-debs\nmount -o ro /dev/disk/by-label/MNNDEBS /run/mnn-edge-debs\nif [ -f /run/mnn-edge-debs/install ]; then DEBIAN_FRONTEND=noninteractive dpkg -i /run/mnn-edge-debs/*.deb; fi\numount /run/mnn-edge-debs\n" \
      >"$1/usr/local/sbin/mnn-edge-test-debs"
    chmod 0755 "$1/usr/local/sbin/mnn-edge-test-debs"
    chroot "$1" systemctl enable mnn-edge-test-debs.service
    cp "$1"/boot/vmlinuz-* "'"$work"'/vmlinuz"
    cp "$1"/boot/initrd.img-* "'"$work"'/initrd.img"
    rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/*_Packages' \
  "$SUITE" "$work/rootfs" "$MIRROR" >"$work/build.log" 2>&1

mkfs.ext4 -q -L mnn-edge-root -d "$work/rootfs" "$work/rootfs.ext4" "$DISK_SIZE" >>"$work/build.log" 2>&1
rootfs_bytes=$(du -sb "$work/rootfs" | cut -f1)
rm -rf "$work/rootfs"
finished=$(date +%s)
cat >"$work/manifest.json" <<EOF
{ "key": "$key", "suite": "$SUITE", "arch": "$ARCH", "mirror": "$MIRROR", "packages": "${PACKAGES[*]}",
  "rootfsBytes": $rootfs_bytes, "diskSize": "$DISK_SIZE", "builtAt": "$(date -u +%FT%TZ)",
  "buildSeconds": $((finished - started)) }
EOF
rm -rf "$dir"
mv "$work" "$dir"
echo "$dir"
