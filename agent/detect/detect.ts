import { profiles as allProfiles, identifySoc } from '../../board-support/index.js';
import type { BoardProfile } from '../../board-support/types.js';
import { type Auxv, parseAuxv } from '../../lib/auxv.js';
import type { Capabilities, Claim, Evidence, SocFamily } from '../../lib/capabilities.js';
import { probeAccelerators } from './accelerators.js';
import { backendAvailability, type EngineBackendProbe, withEngineBackends } from './backends.js';
import { cpuInfoClaims } from './cpu.js';
import { type ArchitectureGuess, architectureOf, type ParsedCpuinfo, parseCpuinfo } from './cpuinfo.js';
import { foreignCpuinfoRule } from './emulation.js';
import type { GpuLoaderEnv } from './gpu-chain.js';
import {
  boardVendor,
  factClaim,
  identityFacts,
  readDeviceTree,
  readFact,
  readSoc0,
  readTegraRelease,
} from './identity.js';
import { createLibraryFinder } from './libraries.js';
import { memoryClaims, thermalZones } from './memory.js';
import { createRootFs, type FileAccess, type RootFs } from './root-fs.js';

export interface DetectOptions {
  /** Directory to probe: `/` on a board, a fixture tree in tests. */
  root?: string;
  /** Device nodes and libraries that exist (absolute board paths); default: the root's present.txt, else stat. */
  presentPaths?: readonly string[];
  /** Replace file operations, e.g. to simulate EACCES on debugfs when tests run as root. */
  access?: Partial<FileAccess>;
  /** Shorthand for `access.readFile`. */
  readFile?: FileAccess['readFile'];
  /** Backends the installed engine was compiled with; others become unusable ("MNN built without X"). */
  engineBackends?: readonly string[];
  /** Loader variables (VK_ICD_FILENAMES, OCL_ICD_VENDORS …); default: this process's when root is `/`, else none. */
  env?: GpuLoaderEnv;
  /** Board-support profiles to match against (default: all of board-support). */
  profiles?: readonly BoardProfile[];
  now?: () => Date;
  /** The CPU this process runs on (`process.arch`); default: this process's when root is `/`, else none. When
   *  /proc/cpuinfo names another architecture (QEMU user mode shows the host's file), this one wins and the CPU
   *  features come from the auxiliary vector, which is the emulated CPU's. */
  processArch?: string;
}

const NODE_ARCHES: Record<string, ArchitectureGuess['value']> = {
  arm64: 'aarch64',
  x64: 'x86_64',
  riscv64: 'riscv64',
  arm: 'armv7',
};

/** The architecture of this process when /proc/cpuinfo describes another one, with both in the reason. */
function foreignCpuinfo(guess: ArchitectureGuess | null, processArch: string | undefined) {
  const mine = processArch === undefined ? undefined : NODE_ARCHES[processArch];
  if (mine === undefined || guess === null || guess.value === mine) return null;
  return {
    value: mine,
    because: foreignCpuinfoRule(mine, processArch ?? '', guess.value, guess.because),
  };
}

/** /proc/cpuinfo parsed, or null with the reason (absent, unreadable, or no processor entries). */
function readCpuinfo(fs: RootFs): { cpuinfo: ParsedCpuinfo | null; cpuinfoEvidence: Evidence } {
  const read = fs.read('/proc/cpuinfo');
  if (!read.ok) return { cpuinfo: null, cpuinfoEvidence: read.evidence };
  const cpuinfo = parseCpuinfo(read.text);
  if (cpuinfo.processors.length === 0)
    return {
      cpuinfo: null,
      cpuinfoEvidence: {
        kind: 'missing',
        path: '/proc/cpuinfo',
        detail: 'no "processor : N" entries (empty or not cpuinfo)',
      },
    };
  return {
    cpuinfo,
    cpuinfoEvidence: {
      kind: 'file',
      path: read.path,
      value: `${cpuinfo.processors.length} processor entries`,
    },
  };
}

/** The auxiliary vector of this process (the emulated CPU's under QEMU user mode), or null with the reason. */
function readAuxv(fs: RootFs): { auxv: Auxv | null; auxvEvidence: Evidence } {
  const read = fs.readBytes('/proc/self/auxv');
  if (!read.ok) return { auxv: null, auxvEvidence: read.evidence };
  const auxv = parseAuxv(read.bytes);
  return {
    auxv,
    auxvEvidence: auxv
      ? { kind: 'file', path: '/proc/self/auxv', value: `${read.bytes.length} bytes` }
      : { kind: 'missing', path: '/proc/self/auxv', detail: 'not a 64-bit auxv vector' },
  };
}

/**
 * Probe a root directory and describe the board. Reads only below `root`, never throws for anything the board
 * presents (missing, empty, junk, unreadable files become unknowns with evidence).
 */
export function detect(options: DetectOptions = {}): Capabilities {
  const root = options.root ?? '/';
  const access: Partial<FileAccess> = { ...options.access };
  if (options.readFile) access.readFile = options.readFile;
  const fs = createRootFs({ root, presentPaths: options.presentPaths, access });

  const { cpuinfo, cpuinfoEvidence } = readCpuinfo(fs);
  const cpuinfoArch = cpuinfo ? architectureOf(cpuinfo) : null;
  const foreign = foreignCpuinfo(
    cpuinfoArch,
    options.processArch ?? (root === '/' ? process.arch : undefined),
  );
  const arch = foreign ?? cpuinfoArch;

  const { auxv, auxvEvidence } = readAuxv(fs);

  const dt = readDeviceTree(fs);
  const soc0 = readSoc0(fs);
  const tegra = readTegraRelease(fs);
  const facts = identityFacts(dt, soc0, cpuinfo, arch, tegra.fact);
  const match = identifySoc(facts, options.profiles ?? allProfiles);
  const profile = match?.profile ?? null;

  const dmiVendor = dt.compatible.length > 0 ? null : readFact(fs, '/sys/class/dmi/id/sys_vendor');
  const dmiProduct = dt.model ? null : readFact(fs, '/sys/class/dmi/id/product_name');
  const identityEvidence: Evidence[] = [
    ...(dt.compatible[0] ? [dt.compatible[0].evidence] : dt.problems.slice(0, 1)),
    soc0.socId.evidence,
    ...(arch ? [] : [cpuinfoEvidence]),
  ];

  const cpu = cpuInfoClaims(fs, {
    cpuinfo,
    cpuinfoEvidence,
    arch,
    auxv,
    auxvEvidence,
    profile,
    cpuinfoForeign: foreign !== null,
  });
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
  const familyEvidence: Evidence[] = [...(match?.soc.name.evidence ?? [])];
  for (const e of [soc0.socId.fact?.evidence, dt.compatible[dt.compatible.length - 1]?.evidence])
    if (e && !familyEvidence.some((x) => JSON.stringify(x) === JSON.stringify(e))) familyEvidence.push(e);
  const family: Claim<SocFamily> = match
    ? { value: match.soc.family, evidence: familyEvidence.length ? familyEvidence : identityEvidence }
    : { value: null, evidence: identityEvidence };
  return {
    schemaVersion: 1,
    root,
    detectedAt: (options.now?.() ?? new Date()).toISOString(),
    board: {
      vendor: boardVendor(
        dt,
        dmiVendor ?? {
          fact: null,
          evidence: dt.problems[0] ?? { kind: 'missing', path: '/sys/firmware/devicetree/base/compatible' },
        },
      ),
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
        ? { value: dt.compatible.map((c) => c.value), evidence: [dt.compatible[0]!.evidence] }
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
export function applyEngineBackends(
  caps: Capabilities,
  engineBackends: readonly string[],
  probes: readonly EngineBackendProbe[] = [],
): Capabilities {
  if (caps.engineBackends !== null) return caps;
  return {
    ...caps,
    backends: withEngineBackends(caps.backends, engineBackends, probes),
    engineBackends: [...engineBackends],
  };
}
