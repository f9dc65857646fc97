SUMMARY = "Appliance image: the mnn-edge agent on a minimal systemd system"
LICENSE = "MIT"

inherit core-image features_check
REQUIRED_DISTRO_FEATURES = "systemd usrmerge"

IMAGE_FEATURES += "ssh-server-openssh"
IMAGE_INSTALL:append = " packagegroup-mnn-edge"

# The agent keeps all state in /var/lib/mnn-edge; the rest of the root filesystem stays as the A/B update
# wrote it. Add read-only-rootfs here once /var is on its own partition.
