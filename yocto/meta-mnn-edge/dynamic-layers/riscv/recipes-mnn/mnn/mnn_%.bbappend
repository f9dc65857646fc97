# SpacemiT K1 / K3 (meta-riscv, collection riscv-layer): RVV 1.0 kernels; on K3 also the IME2 matrix kernels, which
# need a compiler that knows SpacemiT's xsmtvdotii extension (the vendor toolchain): add "spacemit-ime2" to
# MACHINE_FEATURES. meta-riscv also has RISC-V boards without the V extension (the U74 of a VisionFive 2), so the
# options follow the SoC: meta-riscv's K1 and K3 machines set SOC_FAMILY "k1" / "k3", which are overrides. A vendor
# layer whose machine does not set SOC_FAMILY adds the override itself (MACHINEOVERRIDES =. "k1:").
PACKAGECONFIG:append:k1 = " rvv"
PACKAGECONFIG:append:k3 = " rvv ${@bb.utils.contains('MACHINE_FEATURES', 'spacemit-ime2', 'ime', '', d)}"
MNN_RVV_MARCH ??= "rv64gcv"
# The options differ between machines of one tune (riscv64): the packages are per machine there.
PACKAGE_ARCH:k1 = "${MACHINE_ARCH}"
PACKAGE_ARCH:k3 = "${MACHINE_ARCH}"
