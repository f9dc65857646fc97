import { profiles as allProfiles, identifySoc } from '../../board-support/index.js';
import { probeAccelerators } from './accelerators.js';
import { parseAuxv } from './auxv.js';
import { backendAvailability, withEngineBackends } from './backends.js';
import { cpuInfoClaims } from './cpu.js';
import { architectureOf, parseCpuinfo } from './cpuinfo.js';
import { boardVendor, factClaim, identityFacts, readDeviceTree, readFact, readSoc0, readTegraRelease, } from './identity.js';
import { createLibraryFinder } from './libraries.js';
import { memoryClaims, thermalZones } from './memory.js';
import { createRootFs } from './root-fs.js';
/**
 * Probe a root directory and describe the board. Reads only below `root`, never throws for anything the board
 * presents (missing, empty, junk, unreadable files become unknowns with evidence).
 */
export function detect(options = {}) {
    const root = options.root ?? '/';
    const access = { ...options.access };
    if (options.readFile)
        access.readFile = options.readFile;
    const fs = createRootFs({ root, presentPaths: options.presentPaths, access });
    const cpuRead = fs.read('/proc/cpuinfo');
    let cpuinfo = cpuRead.ok ? parseCpuinfo(cpuRead.text) : null;
    let cpuinfoEvidence = cpuRead.evidence;
    if (cpuRead.ok)
        cpuinfoEvidence = {
            kind: 'file',
            path: cpuRead.path,
            value: `${cpuinfo.processors.length} processor entries`,
        };
    if (cpuinfo && cpuinfo.processors.length === 0) {
        cpuinfoEvidence = {
            kind: 'missing',
            path: '/proc/cpuinfo',
            detail: 'no "processor : N" entries (empty or not cpuinfo)',
        };
        cpuinfo = null;
    }
    const arch = cpuinfo ? architectureOf(cpuinfo) : null;
    const auxvRead = fs.readBytes('/proc/self/auxv');
    let auxv = null;
    let auxvEvidence;
    if (auxvRead.ok) {
        auxv = parseAuxv(auxvRead.bytes);
        auxvEvidence = auxv
            ? { kind: 'file', path: '/proc/self/auxv', value: `${auxvRead.bytes.length} bytes` }
            : { kind: 'missing', path: '/proc/self/auxv', detail: 'not a 64-bit auxv vector' };
    }
    else
        auxvEvidence = auxvRead.evidence;
    const dt = readDeviceTree(fs);
    const soc0 = readSoc0(fs);
    const tegra = readTegraRelease(fs);
    const facts = identityFacts(dt, soc0, cpuinfo, arch, tegra.fact);
    const match = identifySoc(facts, options.profiles ?? allProfiles);
    const profile = match?.profile ?? null;
    const dmiVendor = dt.compatible.length > 0 ? null : readFact(fs, '/sys/class/dmi/id/sys_vendor');
    const dmiProduct = dt.model ? null : readFact(fs, '/sys/class/dmi/id/product_name');
    const identityEvidence = [
        ...(dt.compatible[0] ? [dt.compatible[0].evidence] : dt.problems.slice(0, 1)),
        soc0.socId.evidence,
        ...(arch ? [] : [cpuinfoEvidence]),
    ];
    const cpu = cpuInfoClaims(fs, { cpuinfo, cpuinfoEvidence, arch, auxv, auxvEvidence, profile });
    const libs = createLibraryFinder(fs);
    const accelerators = probeAccelerators({
        fs,
        libs,
        profile,
        compatible: dt.compatible,
        tegraRelease: tegra,
    });
    const engineBackends = options.engineBackends ? [...options.engineBackends] : null;
    // The family claim shows every identity source, so a DT that names a sibling die (qcs9100 on a QCS9075) is
    // visible next to the soc0 value that won.
    const familyEvidence = [...(match?.soc.name.evidence ?? [])];
    for (const e of [soc0.socId.fact?.evidence, dt.compatible[dt.compatible.length - 1]?.evidence])
        if (e && !familyEvidence.some((x) => JSON.stringify(x) === JSON.stringify(e)))
            familyEvidence.push(e);
    const family = match
        ? { value: match.soc.family, evidence: familyEvidence.length ? familyEvidence : identityEvidence }
        : { value: null, evidence: identityEvidence };
    return {
        schemaVersion: 1,
        root,
        detectedAt: (options.now?.() ?? new Date()).toISOString(),
        board: {
            vendor: boardVendor(dt, dmiVendor ?? {
                fact: null,
                evidence: dt.problems[0] ?? { kind: 'missing', path: '/sys/firmware/devicetree/base/compatible' },
            }),
            model: dt.model
                ? { value: dt.model.value, evidence: [dt.model.evidence] }
                : dmiProduct?.fact
                    ? factClaim(dmiProduct)
                    : {
                        value: null,
                        evidence: [
                            ...dt.problems.filter((p) => 'path' in p && p.path.endsWith('model')),
                            ...(dmiProduct ? [dmiProduct.evidence] : []),
                        ],
                    },
            compatible: dt.compatible.length
                ? { value: dt.compatible.map((c) => c.value), evidence: [dt.compatible[0].evidence] }
                : { value: null, evidence: dt.problems.filter((p) => 'path' in p && p.path.endsWith('compatible')) },
        },
        soc: {
            family,
            vendor: match
                ? { value: match.soc.vendor, evidence: family.evidence }
                : { value: null, evidence: identityEvidence },
            name: match ? match.soc.name : { value: null, evidence: identityEvidence },
            socId: factClaim(soc0.socId),
            revision: factClaim(soc0.revision),
        },
        cpu,
        memory: memoryClaims(fs, auxv, auxvEvidence),
        accelerators,
        thermal: thermalZones(fs),
        backends: backendAvailability(cpu, accelerators, libs, engineBackends, {
            fs,
            env: options.env ?? (root === '/' ? process.env : {}),
        }),
        engineBackends,
    };
}
/**
 * Capabilities detected before the engine was probed (the agent detects first, then asks an engine host what
 * MNN was built with), now with those backends applied. Already applied: returned as they are.
 */
export function applyEngineBackends(caps, engineBackends, probes = []) {
    if (caps.engineBackends !== null)
        return caps;
    return {
        ...caps,
        backends: withEngineBackends(caps.backends, engineBackends, probes),
        engineBackends: [...engineBackends],
    };
}
//# sourceMappingURL=detect.js.map