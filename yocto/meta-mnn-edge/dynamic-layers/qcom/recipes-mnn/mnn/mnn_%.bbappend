# Qualcomm QCS9075 / QCS6490 (meta-qcom): OpenCL on Adreno and QNN on the Hexagon NPU (HTP).
PACKAGECONFIG:append = " opencl qnn"
# The QAIRT (QNN) SDK is not a recipe: point MNN_QNN_SDK_ROOT at its unpacked directory (the one with
# include/QNN) in local.conf or your distro; the build stops with that variable's name when it is unset.
# MNN's Hexagon backend additionally needs the Hexagon SDK: MACHINE_FEATURES += "mnn-hexagon" and
# MNN_HEXAGON_SDK_ROOT.
# The QNN runtime libraries (libQnnHtp.so, the HTP stub and the skel for the DSP) come from the BSP release;
# name their package here so the image carries them with the engine.
MNN_QNN_RDEPENDS ??= ""
RDEPENDS:${PN}:append = " ${MNN_QNN_RDEPENDS}"
