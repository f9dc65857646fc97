import { claim, findCompatible } from '../match.js';
// SpacemiT RISC-V SoCs. AI acceleration lives in the CPU (RVV + IME matrix instructions), so VLEN and IME come
// from a core table: neither is printed in /proc/cpuinfo.
function coreFact(facts, pattern) {
    const { modelName, uarch } = facts.cpu;
    return [uarch, modelName].find((f) => f !== null && pattern.test(f.value));
}
export const spacemitK1 = {
    id: 'spacemit-k1',
    title: 'SpacemiT K1 / M1 (8 × X60; BPI-F3, Milk-V Jupiter)',
    matchRules: [
        'a device-tree compatible spacemit,k1-x (vendor kernels) or spacemit,k1 (mainline)',
        'else cpuinfo uarch spacemit,x60 / model name "Spacemit(R) X60" / marchid 0x8000000058000001',
    ],
    identify(facts) {
        const compat = findCompatible(facts, /^spacemit,(k1-x|k1|m1)$/);
        const core = coreFact(facts, /x60/i) ??
            (facts.cpu.marchid?.value === '0x8000000058000001' ? facts.cpu.marchid : undefined);
        if (!compat && !core)
            return null;
        const evidence = compat ? compat.evidence : core.evidence;
        return { family: 'spacemit-k1', vendor: 'SpacemiT', name: claim('K1', evidence) };
    },
    accelerators: {
        vlenByCore: { x60: 256 },
        imeByCore: { x60: 1 },
        gpu: { vendor: 'imagination', name: 'PowerVR BXE-2-32' },
    },
    probeHints: [
        'no NPU node: RVV 1.0 (VLEN 256) and IME in the X60 cores',
        'GPU: /dev/dri/renderD128 (pvrsrvkm)',
    ],
    backends: [{ backend: 'cpu', condition: 'always; RVV 1.0 kernels need an engine built for rv64gcv' }],
    threads: {
        placement: 'all-cores',
        advice: 'Two clusters of 4 × X60 at the same clock; 8 threads for prefill, 4 on one cluster for decode',
    },
    quirks: [
        'The uarch line is missing on some vendor kernels: identify X60 by model name or marchid',
        'VLEN (256) is not in /proc/cpuinfo',
    ],
    priors: [],
};
export const spacemitK3 = {
    id: 'spacemit-k3',
    title: 'SpacemiT K3 (8 × X100 + 8 × A100 AI cores)',
    matchRules: [
        'a device-tree compatible spacemit,k3',
        'else cpuinfo uarch spacemit,x100 / model name "Spacemit(R) X100" / marchid 0x8000000058000002',
    ],
    identify(facts) {
        const compat = findCompatible(facts, /^spacemit,k3$/);
        const core = coreFact(facts, /x100/i) ??
            (facts.cpu.marchid?.value === '0x8000000058000002' ? facts.cpu.marchid : undefined);
        if (!compat && !core)
            return null;
        const evidence = compat ? compat.evidence : core.evidence;
        return { family: 'spacemit-k3', vendor: 'SpacemiT', name: claim('K3', evidence) };
    },
    accelerators: {
        vlenByCore: { x100: 256, a100: 1024 },
        imeByCore: { x100: 1, a100: 2 },
        socIme2: true,
        gpu: { vendor: 'imagination', name: 'PowerVR BXM-4-64' },
    },
    probeHints: [
        'AI cores: /proc/set_ai_thread (a thread writes to it before it may run on cpu8–15), /dev/tcm, /dev/ai_dma, /dev/aidma_list',
        'VLEN: X100 256, A100 1024 (table); IME2 on the A100 cores',
    ],
    backends: [
        {
            backend: 'cpu',
            condition: 'always; RVV 1.0 on X100, IME2 on the A100 cluster with an engine built for it',
        },
    ],
    threads: {
        placement: 'x-cluster-only',
        advice: '8 threads on the X100 cores (cpu0–7); A100 cores need /proc/set_ai_thread per thread before affinity works',
    },
    quirks: [
        'sched_setaffinity to cpu8–15 fails with EINVAL until the thread writes to /proc/set_ai_thread',
        'Some images list only cpu0–7 in /proc/cpuinfo',
    ],
    priors: [
        {
            engine: 'MNN',
            model: 'Qwen3.5-2B W4B64',
            workload: 'pp512 / tg128',
            backend: 'cpu',
            threads: 8,
            metrics: { prefill_tok_s: 85.6, decode_tok_s: 17.68 },
            source: 'seed document: "SpacemiT K3, 8 threads, W4B64, Qwen3.5-2B: pp512 85.60 tok/s, tg128 17.68 tok/s"',
        },
    ],
};
//# sourceMappingURL=spacemit.js.map