# SpacemiT K1 / K3 (vendor BSP): RVV 1.0 kernels; on K3 also the IME2 matrix kernels, which need a compiler
# that knows SpacemiT's xsmtvdotii extension (the vendor toolchain): add "spacemit-ime2" to MACHINE_FEATURES.
PACKAGECONFIG:append = " rvv ${@bb.utils.contains('MACHINE_FEATURES', 'spacemit-ime2', 'ime', '', d)}"
MNN_RVV_MARCH ??= "rv64gcv"
