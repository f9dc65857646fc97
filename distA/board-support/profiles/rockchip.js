import { claim, findCompatible } from '../match.js';
// RK3588 and RK3588S share the NPU (3 cores) and the Mali-G610; vendor kernels of RK3588S boards still say
// rockchip,rk3588 (ROCK 5C), so the two are one profile and the name is taken from the compatible as written.
export const rk3588 = {
    id: 'rk3588',
    title: 'Rockchip RK3588 / RK3588S',
    matchRules: ['a device-tree compatible rockchip,rk3588 or rockchip,rk3588s'],
    identify(facts) {
        const compat = findCompatible(facts, /^rockchip,rk3588s?$/);
        if (!compat)
            return null;
        return {
            family: 'rk3588',
            vendor: 'Rockchip',
            name: claim(compat.value.split(',')[1].toUpperCase(), compat.evidence),
        };
    },
    accelerators: { npuCores: 3, gpu: { vendor: 'arm-mali', name: 'Mali-G610' } },
    probeHints: [
        'vendor RKNPU driver: /sys/kernel/debug/rknpu/{version,load} (root only), devfreq fdab0000.npu',
        'NPU node: /dev/rknpu (DMA_HEAP build), a second DRM render node (DRM_GEM build), or /dev/accel/accel0 (mainline rocket, ≥6.18)',
        'librknnrt.so for the MNN RKNN plugin; Mali OpenCL through libmali.so or libOpenCL.so with /dev/mali0',
    ],
    backends: [
        { backend: 'cpu', condition: 'always; 4 × A76 + 4 × A55, fp16 and dotprod, no i8mm' },
        { backend: 'rknn', condition: 'vendor RKNPU driver (not mainline rocket) and librknnrt.so' },
        { backend: 'opencl', condition: '/dev/mali0 and a Mali OpenCL library (libmali*.so or libOpenCL.so)' },
    ],
    threads: {
        placement: 'big-cluster-first',
        advice: 'Four threads on the A76 cores (cpu4–7); the A55 cluster halves per-thread speed and stalls barriers',
    },
    quirks: [
        'rkllm warns on RKNPU drivers older than 0.9.7',
        'The NPU device node depends on the kernel config: /dev/rknpu, a DRM render node, or /dev/accel/accel0',
        'Mainline kernels (rocket driver) are not supported by librknnrt',
    ],
    priors: [],
};
//# sourceMappingURL=rockchip.js.map