import { claim, findCompatible } from '../match.js';
// Jetson Orin modules (Tegra234). The module is named by its p37xx compatible, which Super kits suffix with
// `-super`: match by prefix, never by equality.
export const jetsonOrin = {
    id: 'jetson-orin',
    title: 'NVIDIA Jetson Orin (AGX, NX, Nano, incl. Super)',
    matchRules: ['a device-tree compatible nvidia,tegra234', 'or soc0/family Tegra with soc0/soc_id 35'],
    identify(facts) {
        const compat = findCompatible(facts, /^nvidia,tegra234$/);
        const bySoc0 = facts.soc0.family?.value === 'Tegra' && facts.soc0.socId?.value === '35';
        if (!compat && !bySoc0)
            return null;
        const evidence = [compat?.evidence, facts.soc0.socId?.evidence].filter((e) => e !== undefined);
        return { family: 'jetson-orin', vendor: 'NVIDIA', name: claim('Tegra234', ...evidence) };
    },
    accelerators: {
        cudaComputeCapability: '8.7',
        dlaByModule: {
            'nvidia,p3701': 2,
            'nvidia,p3767-0000': 2,
            'nvidia,p3767-0001': 2,
            'nvidia,p3767-0003': 0,
            'nvidia,p3767-0004': 0,
            'nvidia,p3767-0005': 0,
        },
        moduleNames: {
            'nvidia,p3701': 'Jetson AGX Orin',
            'nvidia,p3767-0000': 'Jetson Orin NX 16GB',
            'nvidia,p3767-0001': 'Jetson Orin NX 8GB',
            'nvidia,p3767-0003': 'Jetson Orin Nano 8GB',
            'nvidia,p3767-0004': 'Jetson Orin Nano 4GB',
            'nvidia,p3767-0005': 'Jetson Orin Nano 8GB (devkit)',
        },
    },
    probeHints: [
        '/etc/nv_tegra_release gives the L4T release',
        'GPU nodes /dev/nvgpu/igpu0/{ctrl,as,channel}, /dev/nvhost-ctrl-gpu, /dev/nvmap',
        'libcuda.so.1 in /usr/lib/aarch64-linux-gnu/nvidia (JetPack 6) or …/tegra (JetPack 5); libcudart in /usr/local/cuda/lib64',
    ],
    backends: [
        { backend: 'cpu', condition: 'always; Cortex-A78AE with fp16 and dotprod' },
        { backend: 'cuda', condition: 'GPU nodes, libcuda.so.1 and libcudart.so present (JetPack installed)' },
    ],
    threads: {
        placement: 'all-cores',
        advice: 'All A78AE cores are identical; leave one core free for the agent and the camera pipeline',
    },
    quirks: [
        'Super kits add "-super" to the carrier/module compatible: match module ids by prefix',
        'soc0/machine is filled from the DT model on Tegra, so it names the board, not the SoC',
        'Orin Nano has no DLA',
    ],
    priors: [],
};
/** L4T release → JetPack release, per NVIDIA's release notes (major.minor granularity). */
export function jetpackForL4t(l4t) {
    const m = /^R(\d+)\.(\d+)(?:\.(\d+))?$/.exec(l4t);
    if (!m)
        return null;
    const [major, minor, patch] = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
    if (major === 36 && minor === 4)
        return patch >= 3 ? '6.2' : '6.1';
    if (major === 36 && minor === 3)
        return '6.0';
    if (major === 35 && minor >= 3)
        return '5.1.x';
    return null;
}
//# sourceMappingURL=jetson.js.map