# NVIDIA Jetson (meta-tegra; its machines carry the "tegra" and "cuda" overrides): the CUDA backend. meta-tegra's
# cuda class (scarthgap branch) adds the toolkit (cuda-libraries, the native nvcc), tegra-libraries-cuda at run time
# and a per-SoC PACKAGE_ARCH, all under those overrides; cuBLAS (libcublas) is what MNN links besides cudart.
inherit cuda
PACKAGECONFIG:append:tegra = " cuda"

def mnn_cuda_capability(d):
    """meta-tegra's CUDA_ARCHITECTURES ("87" on Orin) in the form MNN's CUDA_ARCHS takes ("8.7")."""
    archs = (d.getVar('CUDA_ARCHITECTURES') or '').split()
    return '%s.%s' % (archs[0][:-1], archs[0][-1]) if archs and len(archs[0]) > 1 else ''

MNN_CUDA_ARCHS ??= "${@mnn_cuda_capability(d)}"
