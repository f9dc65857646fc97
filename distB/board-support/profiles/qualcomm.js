import { findCompatible, resolveSocName, soc0MachineName, upperModel } from '../match.js';
// Qualcomm IoT SoCs. The device tree is the least reliable identity source here: the IQ-9075 EVK's upstream DT
// says qcs9100 (lemans-evk), the RB3 Gen 2's says qcm6490. soc0 (socinfo, read from SMEM) is the SoC's own word.
const LEMANS_SOC_IDS = { '534': 'SA8775P', '667': 'QCS9100', '676': 'QCS9075' };
const KODIAK_SOC_IDS = { '487': 'SC7280', '497': 'QCM6490', '498': 'QCS6490' };
function qualcommBySocId(facts, ids) {
    const id = facts.soc0.socId?.value;
    const machine = soc0MachineName(facts)?.value.toUpperCase();
    return (id !== undefined && id in ids) || (machine !== undefined && Object.values(ids).includes(machine));
}
export const qcs9075 = {
    id: 'qcs9075',
    title: 'Qualcomm QCS9075 (Lemans; IQ-9075 EVK, RB8, AirBox Q900)',
    matchRules: [
        'soc0/soc_id 676 (QCS9075), 667 (QCS9100) or 534 (SA8775P), or soc0/machine one of those names',
        'else a device-tree compatible qcom,qcs9075*, qcom,qcs9100, qcom,sa8775p or qcom,lemans*',
        'the SoC name comes from soc0 first: the lemans-evk DT says qcs9100 on a QCS9075',
    ],
    identify(facts) {
        const compat = findCompatible(facts, /^qcom,(qcs9075|qcs9100|sa8775p|lemans)/);
        if (!qualcommBySocId(facts, LEMANS_SOC_IDS) && !compat)
            return null;
        const socCompat = findCompatible(facts, /^qcom,(qcs9075|qcs9100|sa8775p)$/) ?? compat;
        return {
            family: 'qcs9075',
            vendor: 'Qualcomm',
            name: resolveSocName(facts, 'qcs9075', LEMANS_SOC_IDS, socCompat, upperModel),
        };
    },
    accelerators: {
        hexagonArch: 'v73',
        nspCount: 2,
        gpu: { vendor: 'qualcomm-adreno', name: 'Adreno 663' },
    },
    probeHints: [
        'FastRPC nodes /dev/fastrpc-cdsp[-secure] and /dev/fastrpc-cdsp1[-secure] (one per NSP; older kernels name NSP1 "cdsp" too); downstream kernels use /dev/adsprpc-smd',
        'QNN libraries libQnnHtp.so, libQnnSystem.so, libQnnHtpV73Stub.so; libcdsprpc.so from fastrpc',
        'DSP_LIBRARY_PATH /usr/share/qcom/sa8775p/Qualcomm/IQ9075-EVK/dsp (keyed by DT model)',
        'Adreno: /dev/dri/renderD128 (msm DRM) or /dev/kgsl-3d0 (downstream); OpenCL only with the Adreno userspace',
    ],
    backends: [
        { backend: 'cpu', condition: 'always; 8 × Cortex-A78C with fp16 and dotprod, no i8mm' },
        {
            backend: 'hexagon',
            condition: 'HTP v73, a FastRPC CDSP node, libcdsprpc.so, and libMNN_htpops.so from the engine',
        },
        {
            backend: 'qnn',
            condition: 'a FastRPC CDSP node, libQnnHtp.so, libQnnSystem.so and libQnnHtpV73Stub.so',
        },
        { backend: 'opencl', condition: 'Adreno OpenCL library (libOpenCL.so) from the Qualcomm GPU userspace' },
    ],
    threads: {
        placement: 'all-cores',
        advice: 'Two clusters of 4 × A78C at the same clock: use up to 8 threads for prefill, 4 for decode to leave room for the agent',
    },
    quirks: [
        'Upstream DT (lemans-evk.dts) says qcom,qcs9100 on a QCS9075 board; Ubuntu qcom kernels say qcom,qcs9075',
        'NSP1 was registered as "cdsp" instead of "cdsp1" before a sa8775p.dtsi fix: count NSPs from the table when nodes collide',
        'DSP_LIBRARY_PATH is keyed by the DT model string, not the SoC name',
    ],
    priors: [
        {
            engine: 'MNN 3.6.1',
            model: 'Qwen3.5-2B W4A16',
            workload: 'one 256×256 image, 84 prompt tokens',
            backend: 'cpu',
            metrics: { vision_s: 0.43, prefill_tok_s: 78.15, decode_tok_s: 33.3 },
            source: 'seed document: "QCS9075 with MNN 3.6.1, Qwen3.5-2B W4A16, one 256×256 image, 84 prompt tokens: CPU vision 0.43 s / prefill 78.15 tok/s / decode 33.30 tok/s"',
        },
        {
            engine: 'MNN 3.6.1',
            model: 'Qwen3.5-2B W4A16',
            workload: 'one 256×256 image, 84 prompt tokens',
            backend: 'hexagon',
            metrics: { vision_s: 0.39, prefill_tok_s: 59.03, decode_tok_s: 15.27 },
            source: 'seed document: "direct Hexagon 0.39 / 59.03 / 15.27" (same run as the CPU figures)',
        },
        {
            engine: 'MNN 3.6.1',
            model: 'Qwen3.5-2B W4A16',
            workload: 'one 256×256 image, 84 prompt tokens',
            backend: 'opencl',
            metrics: { vision_s: 27.68, prefill_tok_s: 3.3, decode_tok_s: 4.09 },
            source: 'seed document: "OpenCL 27.68 / 3.30 / 4.09" (same run as the CPU figures)',
        },
    ],
};
export const qcs6490 = {
    id: 'qcs6490',
    title: 'Qualcomm QCS6490 / QCM6490 (Kodiak; RB3 Gen 2, Dragon Q6A)',
    matchRules: [
        'soc0/soc_id 497 (QCM6490), 498 (QCS6490) or 487 (SC7280), or soc0/machine one of those names',
        'else a device-tree compatible qcom,qcs6490*, qcom,qcm6490 or qcom,sc7280',
        'RB3 Gen 2 kernels before late 2025 report QCM6490 / 497 for a QCS6490: same die, same HTP',
    ],
    identify(facts) {
        const compat = findCompatible(facts, /^qcom,(qcs6490|qcm6490|sc7280)/);
        if (!qualcommBySocId(facts, KODIAK_SOC_IDS) && !compat)
            return null;
        const socCompat = findCompatible(facts, /^qcom,(qcs6490|qcm6490|sc7280)$/) ?? compat;
        return {
            family: 'qcs6490',
            vendor: 'Qualcomm',
            name: resolveSocName(facts, 'qcs6490', KODIAK_SOC_IDS, socCompat, upperModel),
        };
    },
    accelerators: {
        hexagonArch: 'v68',
        nspCount: 1,
        gpu: { vendor: 'qualcomm-adreno', name: 'Adreno 643' },
    },
    probeHints: [
        'FastRPC /dev/fastrpc-cdsp[-secure] (upstream) or /dev/adsprpc-smd (downstream)',
        'QNN libraries libQnnHtp.so, libQnnSystem.so, libQnnHtpV68Stub.so',
        'DSP_LIBRARY_PATH /usr/share/qcom/qcm6490/Thundercomm/RB3gen2/dsp (note qcm6490)',
    ],
    backends: [
        { backend: 'cpu', condition: 'always; 1 × A78 @2.7 GHz + 3 × A78 @2.4 GHz + 4 × A55, fp16 and dotprod' },
        {
            backend: 'qnn',
            condition: 'a FastRPC CDSP node, libQnnHtp.so, libQnnSystem.so and libQnnHtpV68Stub.so',
        },
        { backend: 'opencl', condition: 'Adreno OpenCL library (libOpenCL.so) from the Qualcomm GPU userspace' },
    ],
    threads: {
        placement: 'big-cluster-first',
        advice: 'Run on the four A78 cores (cpu4–7, prime core cpu7 first); adding the A55s slows decode',
    },
    quirks: [
        'The DT has no qcom,qcs6490 string: the SoC entry is qcom,qcm6490',
        'Direct Hexagon (MNN_FORWARD_HEXAGON) needs HTP v73 or newer; this SoC has v68, so use QNN',
    ],
    priors: [],
};
//# sourceMappingURL=qualcomm.js.map