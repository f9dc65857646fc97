# Qualcomm boards (meta-qcom): FastRPC device access and the QNN DSP library path.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI += "file://mnn-edge-qcom.conf file://60-mnn-edge-qcom.rules"

do_install:append() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-qcom.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-qcom.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-qcom.rules
}

FILES:${PN} += "${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-qcom.rules"
# QNN runtime and Hexagon skeletons; names as in the Qualcomm Linux BSP release you build.
RRECOMMENDS:${PN}:append = " qcom-fastrpc"
