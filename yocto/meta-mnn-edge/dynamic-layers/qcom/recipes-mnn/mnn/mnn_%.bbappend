# Qualcomm QCS9075 / QCS6490 (meta-qcom; its machines carry the "qcom" override): OpenCL on Adreno and QNN on the
# Hexagon NPU (HTP); MACHINE_FEATURES "mnn-hexagon" adds MNN's own Hexagon backend (it needs the Hexagon SDK).
PACKAGECONFIG:append:qcom = " opencl qnn ${@bb.utils.contains('MACHINE_FEATURES', 'mnn-hexagon', 'hexagon', '', d)}"
# The QAIRT (QNN) SDK: meta-qcom's master branch has a recipe, qairt-sdk (headers in ${includedir}/QNN, the
# runtime libraries and the HTP skeletons per DSP arch); with it, set in local.conf or your distro
#   DEPENDS:append:pn-mnn = " qairt-sdk"
#   MNN_QNN_SDK_ROOT:pn-mnn = "${RECIPE_SYSROOT}${prefix}"
#   MNN_QNN_RDEPENDS = "qairt-sdk"
# meta-qcom's scarthgap branch has none: point MNN_QNN_SDK_ROOT at an unpacked SDK (the directory with
# include/QNN) and name the package that ships its runtime libraries in MNN_QNN_RDEPENDS. The build stops with
# the variable's name when MNN_QNN_SDK_ROOT is unset, as does "mnn-hexagon" without MNN_HEXAGON_SDK_ROOT.
MNN_QNN_RDEPENDS ??= ""
RDEPENDS:${PN}:append:qcom = " ${MNN_QNN_RDEPENDS}"
# The options differ from those of another machine with the same tune.
PACKAGE_ARCH:qcom = "${MACHINE_ARCH}"
