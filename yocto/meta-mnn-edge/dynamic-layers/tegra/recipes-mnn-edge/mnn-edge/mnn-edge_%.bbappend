# NVIDIA Jetson Orin (meta-tegra; its machines carry the "tegra" override): GPU device access for CUDA.
FILESEXTRAPATHS:prepend := "${THISDIR}/files:"
SRC_URI:append:tegra = " file://mnn-edge-tegra.conf file://60-mnn-edge-tegra.rules"

do_install:append:tegra() {
    install -D -m 0644 ${UNPACKDIR}/mnn-edge-tegra.conf ${D}${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf
    install -D -m 0644 ${UNPACKDIR}/60-mnn-edge-tegra.rules ${D}${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-tegra.rules
}

FILES:${PN}:append:tegra = " ${systemd_system_unitdir}/mnn-edge.service.d/50-board.conf ${nonarch_base_libdir}/udev/rules.d/60-mnn-edge-tegra.rules"
# The CUDA driver libraries (libcuda): meta-tegra recipe tegra-libraries-cuda.
RRECOMMENDS:${PN}:append:tegra = " tegra-libraries-cuda"
# Board files: the package differs from that of another machine with the same tune.
PACKAGE_ARCH:tegra = "${MACHINE_ARCH}"
