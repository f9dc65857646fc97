# NVIDIA Jetson Orin (meta-tegra): GPU device access for CUDA.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI += "file://mnn-edge-tegra.conf file://60-mnn-edge-tegra.rules"

do_install:append() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-tegra.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-tegra.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-tegra.rules
}

FILES:${PN} += "${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-tegra.rules"
RRECOMMENDS:${PN}:append = " tegra-libraries-cuda"
