# SpacemiT K1 / K3 (meta-riscv, collection riscv-layer; SOC_FAMILY "k1" / "k3"): AI-core device access. Other
# RISC-V machines of meta-riscv get nothing from this append.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
MNN_EDGE_SPACEMIT = ""
MNN_EDGE_SPACEMIT:k1 = "1"
MNN_EDGE_SPACEMIT:k3 = "1"
SRC_URI += "${@'file://mnn-edge-spacemit.conf file://60-mnn-edge-spacemit.rules' if d.getVar('MNN_EDGE_SPACEMIT') else ''}"

do_install:append() {
    if [ -n "${MNN_EDGE_SPACEMIT}" ]; then
        install -D -m 0644 ${UNPACKDIR}/mnn-edge-spacemit.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
        install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-spacemit.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-spacemit.rules
    fi
}

FILES:${PN} += "${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-spacemit.rules"
PACKAGE_ARCH:k1 = "${MACHINE_ARCH}"
PACKAGE_ARCH:k3 = "${MACHINE_ARCH}"
