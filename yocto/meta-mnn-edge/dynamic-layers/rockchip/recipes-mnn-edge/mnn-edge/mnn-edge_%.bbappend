# Rockchip RK3588 (meta-rockchip): Mali and DMA heap access.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI += "file://mnn-edge-rockchip.conf file://60-mnn-edge-rockchip.rules"

do_install:append() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-rockchip.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-rockchip.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-rockchip.rules
}

FILES:${PN} += "${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-rockchip.rules"
# librknnrt (RKNN runtime) comes with the BSP; the mnn recipe links it when built with MNN_NPU/RKNN.
