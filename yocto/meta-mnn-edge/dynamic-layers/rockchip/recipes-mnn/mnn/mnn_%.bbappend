# Rockchip RK3588 (meta-rockchip): RKNN on the NPU and OpenCL on the Mali-G610.
PACKAGECONFIG:append = " opencl rknn"
# Rockchip's libmali blob is the OpenCL implementation; set the soname it installs if it has no
# libOpenCL.so.1 (MNN dlopens libOpenCL.so, which the mnn-opencl package links to this name).
MNN_OPENCL_LIBRARY ??= "libOpenCL.so.1"
