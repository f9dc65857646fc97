# Rockchip RK3588 (meta-rockchip; its machines carry the "rockchip" override): Mali and DMA heap access.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI:append:rockchip = " file://mnn-edge-rockchip.conf file://60-mnn-edge-rockchip.rules"

do_install:append:rockchip() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-rockchip.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-rockchip.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-rockchip.rules
}

FILES:${PN}:append:rockchip = " ${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-rockchip.rules"
# The RKNPU is a DRM render node; the agent reads its load through the privileged ExecStartPre (debugfs).
# Board files: the package differs from that of another machine with the same tune.
PACKAGE_ARCH:rockchip = "${MACHINE_ARCH}"
