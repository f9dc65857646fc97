# NVIDIA Jetson Orin (meta-tegra): the CUDA backend, compiled for the Orin GPU (Ampere GA10B, compute 8.7).
inherit cuda
PACKAGECONFIG:append = " cuda"
MNN_CUDA_ARCHS ??= "8.7"
