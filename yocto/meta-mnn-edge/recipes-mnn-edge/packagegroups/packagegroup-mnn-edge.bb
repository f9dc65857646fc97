SUMMARY = "mnn-edge agent and what it needs at runtime"
LICENSE = "MIT"

PACKAGE_ARCH = "${MACHINE_ARCH}"
inherit packagegroup features_check
# As the agent's recipe: a distro without systemd skips the group instead of failing on a skipped mnn-edge.
REQUIRED_DISTRO_FEATURES = "systemd usrmerge"

# "1" puts mosquitto in the image and points the agent at it instead of its embedded broker.
MNN_EDGE_LOCAL_BROKER ??= "0"
# "0" leaves the shipped wake word out (the agent then says "No wake word" until one is installed).
MNN_EDGE_WAKE ??= "1"

RDEPENDS:${PN} = " \
    mnn-edge \
    mnn \
    ${@bb.utils.contains('MNN_EDGE_LOCAL_BROKER', '1', 'mnn-edge-mosquitto', '', d)} \
    ${@bb.utils.contains('MNN_EDGE_WAKE', '1', 'mnn-edge-wake', '', d)} \
"
# Useful on a device in the field, not required by the agent.
RRECOMMENDS:${PN} = "alsa-utils v4l-utils"
