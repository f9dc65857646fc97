SUMMARY = "Appliance image: the mnn-edge agent on a minimal systemd system"
LICENSE = "MIT"

# core-image's default IMAGE_INSTALL adds packagegroup-base-extended (wifi, bluetooth, nfs, ... tools); the
# appliance sets the whole list instead, as core-image-minimal does, and keeps core-image for IMAGE_FEATURES.
IMAGE_INSTALL = "packagegroup-core-boot packagegroup-mnn-edge ${CORE_IMAGE_EXTRA_INSTALL}"
IMAGE_LINGUAS = ""

inherit core-image features_check
REQUIRED_DISTRO_FEATURES = "systemd usrmerge"

IMAGE_FEATURES += "ssh-server-openssh"

# The agent keeps all state in /var/lib/mnn-edge; the rest of the root filesystem stays as the A/B update
# wrote it. Add read-only-rootfs here once /var is on its own partition.
