# Qualcomm boards (meta-qcom): FastRPC device access and the QNN DSP library path.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI:append:qcom = " file://mnn-edge-qcom.conf file://60-mnn-edge-qcom.rules"

do_install:append:qcom() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-qcom.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-qcom.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-qcom.rules
}

FILES:${PN}:append:qcom = " ${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-qcom.rules"
# The FastRPC user-space library (libcdsprpc) and its daemons: recipe `fastrpc` in meta-qcom (scarthgap and
# master branches).
RRECOMMENDS:${PN}:append:qcom = " fastrpc"
# Board files: the package differs from that of another machine with the same tune.
PACKAGE_ARCH:qcom = "${MACHINE_ARCH}"
