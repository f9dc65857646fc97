# Rockchip RK3588 (meta-rockchip; its machines carry the "rockchip" override): OpenCL on the Mali-G610.
# meta-rockchip's rockchip-libmali (scarthgap branch) is an OpenCL ICD and RDEPENDS opencl-icd-loader, which
# installs libOpenCL.so.1: the default MNN_OPENCL_LIBRARY fits. A BSP whose libmali is linked directly (no ICD
# loader) sets MNN_OPENCL_LIBRARY to the soname it installs. RKNN on the NPU is not enabled: meta-rockchip has no
# recipe for rknn_api.h / librknnrt.so (see PACKAGECONFIG[rknn] in mnn_git.bb).
PACKAGECONFIG:append:rockchip = " opencl"
# The options differ from those of another machine with the same tune.
PACKAGE_ARCH:rockchip = "${MACHINE_ARCH}"
