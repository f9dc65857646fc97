SUMMARY = "MNN inference engine with its LLM runtime, as the mnn-edge agent uses it"
DESCRIPTION = "Alibaba's MNN built as one libMNN.so (Express, the LLM engine with omni image/audio input, audio \
and image codecs) with the backends the board has: OpenCL, Vulkan, CUDA, QNN, Hexagon, RVV and SpacemiT IME2."
HOMEPAGE = "https://github.com/alibaba/MNN"
SECTION = "libs"
LICENSE = "Apache-2.0"
LIC_FILES_CHKSUM = "file://LICENSE.txt;md5=dc18cfcd1065a9e9c80aff2102ebd32a"

# The commit mnn-edge's engine addon is tested against (3.6.1 plus 87 commits on master). Override it with
# SRCREV:pn-mnn in your distro; the addon and libMNN.so must come from the same build either way.
SRC_URI = "git://github.com/alibaba/MNN.git;protocol=https;branch=master"
# MNN's CMake would download these at configure time; BitBake fetches them instead so that builds work offline
# from a download mirror. Versions and hashes are the ones MNN's CMake files name at SRCREV.
SRC_URI:append:aarch64 = " https://github.com/ARM-software/kleidiai/archive/refs/tags/v1.16.0.tar.gz;name=kleidiai;subdir=kleidiai;downloadfilename=kleidiai-1.16.0.tar.gz"
SRC_URI[kleidiai.md5sum] = "0a9e9008adb6031f9e8cf70dff4a3321"
SRC_URI += "${@bb.utils.contains('PACKAGECONFIG', 'cuda', 'git://github.com/NVIDIA/cutlass.git;protocol=https;nobranch=1;name=cutlass;destsuffix=git/3rd_party/cutlass/v4.0.0', '', d)}"
SRCREV_cutlass = "b995f933179c22d3fe0d871c3a53d11e4681950f"
SRCREV_FORMAT = "default"
SRCREV ?= "4d40bdbd7efb73a58383bb5da867a6f41eb1776e"
PV = "3.6.1+git"
# scarthgap unpacks into WORKDIR and has no UNPACKDIR; later releases set it themselves.
UNPACKDIR ??= "${WORKDIR}"
S = "${UNPACKDIR}/git"

inherit cmake

# The default is what the agent needs on every board. GPU backends follow DISTRO_FEATURES (opencl, vulkan); the
# per-board appends in dynamic-layers/ add cuda, qnn, hexagon, rvv and ime (rknn is opt-in, see below). Nothing
# here reads MACHINE or MACHINE_FEATURES: the package is per tune, and two machines of one tune must build the same
# one; what depends on the board is in the appends, which make their packages per machine.
PACKAGECONFIG ??= "llm omni audio imgcodecs ${@bb.utils.filter('DISTRO_FEATURES', 'opencl vulkan', d)}"
PACKAGECONFIG[llm] = "-DMNN_BUILD_LLM=ON -DMNN_LLM_BUILD_DEMO=ON -DLLM_SUPPORT_HTTP_RESOURCE=OFF,-DMNN_BUILD_LLM=OFF"
PACKAGECONFIG[omni] = "-DMNN_BUILD_LLM_OMNI=ON,-DMNN_BUILD_LLM_OMNI=OFF"
PACKAGECONFIG[audio] = "-DMNN_BUILD_AUDIO=ON,-DMNN_BUILD_AUDIO=OFF"
PACKAGECONFIG[imgcodecs] = "-DMNN_BUILD_OPENCV=ON -DMNN_IMGCODECS=ON,-DMNN_BUILD_OPENCV=OFF -DMNN_IMGCODECS=OFF"
# OpenCL and Vulkan: MNN carries the API headers and dlopen()s the loader by its unversioned name at run time.
PACKAGECONFIG[opencl] = "-DMNN_OPENCL=ON,-DMNN_OPENCL=OFF"
PACKAGECONFIG[vulkan] = "-DMNN_VULKAN=ON,-DMNN_VULKAN=OFF"
PACKAGECONFIG[cuda] = "-DMNN_CUDA=ON -DCUDA_ARCHS=${MNN_CUDA_ARCHS} -DFETCHCONTENT_FULLY_DISCONNECTED=ON,-DMNN_CUDA=OFF,cuda-cudart libcublas"
PACKAGECONFIG[qnn] = "-DMNN_QNN=ON -DQNN_SDK_ROOT=${MNN_QNN_SDK_ROOT},-DMNN_QNN=OFF"
PACKAGECONFIG[hexagon] = "-DMNN_HEXAGON=ON -DHEXAGON_SDK_ROOT=${MNN_HEXAGON_SDK_ROOT},-DMNN_HEXAGON=OFF"
# MNN's RKNN backend is a plugin op that runs models converted for the NPU (a .rknn beside the .mnn); it needs
# rknn_api.h to build and loads librknnrt.so at run time from $MNN_RKNN_RUNTIME_LIB. meta-rockchip has no recipe for
# either, so this stays off unless the distro names the recipe that provides them (MNN_RKNN_DEPENDS).
PACKAGECONFIG[rknn] = "-DMNN_RKNN=ON -DMNN_WITH_PLUGIN=ON -DRKNN_API_INCLUDE_DIR=${MNN_RKNN_API_INCLUDE_DIR},-DMNN_RKNN=OFF,${MNN_RKNN_DEPENDS}"
PACKAGECONFIG[rvv] = "-DMNN_USE_RVV=ON -DMNN_RVV_MARCH=${MNN_RVV_MARCH},-DMNN_USE_RVV=OFF"
# SpacemiT K3 integrated matrix extension (IME2) kernels; the compiler must know the xsmtvdotii extension.
# No "off" flag: MNN declares the option only in its RISC-V CMake file, and cmake.bbclass fails the build
# (unknown-configure-option) on a -D the project never reads.
PACKAGECONFIG[ime] = "-DMNN_RVV_SPACEMIT_IME2=ON"

# CUDA compute capability of the board's GPU ("8.7" on Jetson Orin); the tegra append sets it.
MNN_CUDA_ARCHS ??= ""
# Directories of vendor SDKs that are not packaged as recipes (QAIRT with include/QNN, the Hexagon SDK).
MNN_QNN_SDK_ROOT ??= ""
MNN_HEXAGON_SDK_ROOT ??= ""
# The recipe that installs rknn_api.h and librknnrt.so, and where the header lands in the sysroot.
MNN_RKNN_DEPENDS ??= ""
MNN_RKNN_API_INCLUDE_DIR ??= "${STAGING_INCDIR}"
MNN_RVV_MARCH ??= "rv64gcv"

EXTRA_OECMAKE = " \
    -DMNN_BUILD_SHARED_LIBS=ON \
    -DMNN_SEP_BUILD=OFF \
    -DMNN_LOW_MEMORY=ON \
    -DMNN_SUPPORT_TRANSFORMER_FUSE=ON \
    -DMNN_BUILD_TOOLS=OFF \
    -DMNN_BUILD_CONVERTER=OFF \
    -DMNN_BUILD_TEST=OFF \
    -DMNN_BUILD_BENCHMARK=OFF \
    -DMNN_USE_SYSTEM_LIB=OFF \
    -DMNN_USE_LOGCAT=OFF \
"
EXTRA_OECMAKE:append:aarch64 = " -DMNN_ARM82=ON -DKLEIDIAI_SRC_DIR=${UNPACKDIR}/kleidiai/kleidiai-1.16.0"
EXTRA_OECMAKE:append:x86-64 = " -DMNN_AVX2=ON"

def mnn_missing_settings(d):
    """bbfatal lines for backends enabled without the setting they need; empty when all is set."""
    needs = (('qnn', 'MNN_QNN_SDK_ROOT', 'the QAIRT/QNN SDK directory, the one with include/QNN'),
             ('hexagon', 'MNN_HEXAGON_SDK_ROOT', 'the Hexagon SDK directory'),
             ('cuda', 'MNN_CUDA_ARCHS', 'the GPU compute capability, e.g. 8.7'),
             ('rknn', 'MNN_RKNN_DEPENDS', 'the recipe providing rknn_api.h and librknnrt.so'))
    enabled = d.getVar('PACKAGECONFIG').split()
    return '\n'.join('bbfatal "PACKAGECONFIG %s needs %s (%s)"' % (o, v, what)
                     for o, v, what in needs if o in enabled and not d.getVar(v))

# Checked when configuring, not when parsing: a parse error would stop every build that merely sees this recipe.
do_configure:prepend() {
    ${@mnn_missing_settings(d)}
}

# MNN dlopen()s "libvulkan.so" and "libOpenCL.so", names that only -dev packages install on most distros. The
# links live in a private directory that libMNN.so's RUNPATH names, so the image needs no -dev package and no
# file clashes with vulkan-loader-dev or an ICD loader's -dev package in an SDK.
MNN_LOADER_DIR = "${libdir}/mnn/loaders"
OECMAKE_RPATH = "${MNN_LOADER_DIR}"
# Sonames of the libraries the links point at; a BSP whose OpenCL comes from a vendor blob sets its own.
MNN_VULKAN_LIBRARY ??= "libvulkan.so.1"
MNN_OPENCL_LIBRARY ??= "libOpenCL.so.1"

do_install:append() {
    # MNN installs neither the LLM tools nor a versioned library.
    if ${@bb.utils.contains('PACKAGECONFIG', 'llm', 'true', 'false', d)}; then
        install -d ${D}${bindir}
        install -m 0755 ${B}/llm_demo ${B}/llm_bench ${D}${bindir}/
    fi
    # With CUDA, libMNN.so links MNN's kernels from a second library that MNN's install rule leaves out.
    if ${@bb.utils.contains('PACKAGECONFIG', 'cuda', 'true', 'false', d)}; then
        install -m 0755 ${B}/source/backend/cuda/libMNN_Cuda_Main.so ${D}${libdir}/
    fi
    install -d ${D}${MNN_LOADER_DIR}
    if ${@bb.utils.contains('PACKAGECONFIG', 'vulkan', 'true', 'false', d)}; then
        ln -sf ../../${MNN_VULKAN_LIBRARY} ${D}${MNN_LOADER_DIR}/libvulkan.so
    fi
    if ${@bb.utils.contains('PACKAGECONFIG', 'opencl', 'true', 'false', d)}; then
        ln -sf ../../${MNN_OPENCL_LIBRARY} ${D}${MNN_LOADER_DIR}/libOpenCL.so
    fi
}

PACKAGES =+ "${PN}-tools \
    ${@bb.utils.contains('PACKAGECONFIG', 'vulkan', '${PN}-vulkan', '', d)} \
    ${@bb.utils.contains('PACKAGECONFIG', 'opencl', '${PN}-opencl', '', d)} \
"

# libMNN.so is MNN's only name for the library (no soname version): it belongs to the runtime package, as does
# the CUDA kernels' library it links when built with cuda.
FILES_SOLIBSDEV = ""
FILES:${PN} += "${libdir}/libMNN.so ${libdir}/libMNN_Cuda_Main.so"
FILES:${PN}-dev += "${includedir}"
FILES:${PN}-tools = "${bindir}/llm_demo ${bindir}/llm_bench"
FILES:${PN}-vulkan = "${MNN_LOADER_DIR}/libvulkan.so"
FILES:${PN}-opencl = "${MNN_LOADER_DIR}/libOpenCL.so"
INSANE_SKIP:${PN} += "dev-so"
INSANE_SKIP:${PN}-vulkan += "dev-so"
INSANE_SKIP:${PN}-opencl += "dev-so"

# The runtime pulls in the loader links its backends dlopen, and they pull in the loaders.
RDEPENDS:${PN} += " \
    ${@bb.utils.contains('PACKAGECONFIG', 'vulkan', '${PN}-vulkan', '', d)} \
    ${@bb.utils.contains('PACKAGECONFIG', 'opencl', '${PN}-opencl', '', d)} \
"
RDEPENDS:${PN}-vulkan = "vulkan-loader"
RDEPENDS:${PN}-opencl = "virtual-opencl-icd"
RDEPENDS:${PN}-tools = "${PN}"

# The native variant is the model converter alone: mnn-edge-wake converts the shipped wake word's ONNX graphs
# on the build host (.mnn files do not depend on the CPU). Static, so MNNConvert needs no libMNN beside it.
BBCLASSEXTEND = "native"
PACKAGECONFIG:class-native = ""
EXTRA_OECMAKE:append:class-native = " -DMNN_BUILD_CONVERTER=ON -DMNN_BUILD_SHARED_LIBS=OFF"
do_install:append:class-native() {
    install -d ${D}${bindir}
    install -m 0755 ${B}/MNNConvert ${D}${bindir}/
}
