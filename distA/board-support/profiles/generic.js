import { claim, upperModel } from '../match.js';
// Fallback profiles by architecture: any board we have no family profile for still gets a sound CPU plan.
function socFromCompatible(facts, family) {
    // The last compatible entry names the SoC (board first, SoC last) by DT convention.
    const last = facts.compatible[facts.compatible.length - 1];
    const vendor = last ? (last.value.split(',')[0] ?? 'unknown') : 'unknown';
    return {
        family,
        vendor,
        name: last
            ? claim(upperModel(last.value), last.evidence)
            : claim(null, ...(facts.dtModel ? [facts.dtModel.evidence] : [])),
    };
}
export const riscvGeneric = {
    id: 'riscv-generic',
    title: 'Generic RISC-V 64 (with or without the V extension)',
    matchRules: ['architecture riscv64 and no family profile matched'],
    identify(facts) {
        return facts.architecture === 'riscv64' ? socFromCompatible(facts, 'riscv-generic') : null;
    },
    accelerators: {
        vlenByCore: {},
        gpuByCompatible: { 'starfive,jh7110': { vendor: 'imagination', name: 'PowerVR BXE-4-32' } },
    },
    probeHints: [
        'RVV from the single-letter extensions of the isa line (before the first _), VLEN from zvl*b if listed',
    ],
    backends: [
        {
            backend: 'cpu',
            condition: 'always; vector kernels only when the isa has v and the engine was built for it',
        },
    ],
    threads: { placement: 'all-cores', advice: 'One thread per hart; without V expect scalar-speed inference' },
    quirks: ['Never search for "v" anywhere in rv64…: read the letters before the first underscore'],
    priors: [],
};
export const arm64Generic = {
    id: 'arm64-generic',
    title: 'Generic ARM64 (e.g. Raspberry Pi 5)',
    matchRules: ['architecture aarch64 and no family profile matched'],
    identify(facts) {
        return facts.architecture === 'aarch64' ? socFromCompatible(facts, 'arm64-generic') : null;
    },
    accelerators: {
        gpuByCompatible: {
            'brcm,bcm2712': { vendor: 'broadcom-v3d', name: 'VideoCore VII (V3D 7.1)' },
            'brcm,bcm2711': { vendor: 'broadcom-v3d', name: 'VideoCore VI (V3D 4.2)' },
        },
    },
    probeHints: ['Vulkan through Mesa (libvulkan.so.1 + a DRM render node); OpenCL only with a vendor library'],
    backends: [
        { backend: 'cpu', condition: 'always' },
        { backend: 'vulkan', condition: 'libvulkan.so.1 and a DRM render node' },
        { backend: 'opencl', condition: 'an OpenCL library and a GPU node' },
    ],
    threads: { placement: 'big-cluster-first', advice: 'Threads on the fastest cluster first, one per core' },
    quirks: ['Raspberry Pi 5 kernels default to 16 KiB pages'],
    priors: [],
};
export const x86Host = {
    id: 'x86-64',
    title: 'x86-64 host (development and CI)',
    matchRules: ['architecture x86_64'],
    identify(facts) {
        if (facts.architecture !== 'x86_64')
            return null;
        const name = facts.cpu.modelName;
        const vendor = facts.cpu.vendorId?.value ?? 'unknown';
        return { family: 'x86-64', vendor, name: name ? claim(name.value, name.evidence) : claim(null) };
    },
    accelerators: {},
    probeHints: ['NVIDIA dGPU: /dev/nvidia0, /dev/nvidiactl, libcuda.so.1'],
    backends: [
        { backend: 'cpu', condition: 'always; AVX2 kernels, AVX-512 when the engine was built with them' },
        { backend: 'cuda', condition: 'an NVIDIA GPU node, libcuda.so.1 and libcudart.so' },
        { backend: 'vulkan', condition: 'libvulkan.so.1 and a DRM render node' },
    ],
    threads: {
        placement: 'physical-cores',
        advice: 'One thread per physical core; SMT siblings add little to GEMM',
    },
    quirks: [],
    priors: [],
};
//# sourceMappingURL=generic.js.map