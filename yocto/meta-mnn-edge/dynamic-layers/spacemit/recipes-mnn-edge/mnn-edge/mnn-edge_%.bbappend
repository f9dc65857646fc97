# SpacemiT K1/K3 (vendor BSP, collection "spacemit"): AI-core device access.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI += "file://mnn-edge-spacemit.conf file://60-mnn-edge-spacemit.rules"

do_install:append() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-spacemit.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-spacemit.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-spacemit.rules
}

FILES:${PN} += "${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-spacemit.rules"

