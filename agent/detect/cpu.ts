import type { BoardProfile } from '../../board-support/types.js';
import {
  ARM64_HWCAP_BITS,
  type Arm64HwcapName,
  type Auxv,
  arm64HasHwcap,
  hex,
  riscvHasLetter,
} from '../../lib/auxv.js';
import type {
  Claim,
  CpuCluster,
  CpuFeatureName,
  CpuFeatures,
  CpuInfo,
  Evidence,
} from '../../lib/capabilities.js';
import {
  type ArchitectureGuess,
  commonWords,
  coreName,
  type ParsedCpuinfo,
  riscvBaseLetters,
  riscvMultiLetter,
} from './cpuinfo.js';
import type { RootFs } from './root-fs.js';

// CPU claims: architecture, clusters (core type × max clock, fastest first) and normalised ISA features. cpuinfo
// is the primary source; auxv confirms it on arm64 and stands in when cpuinfo has no Features line.

const CPUINFO = '/proc/cpuinfo';
const AUXV = '/proc/self/auxv';

export interface CpuSources {
  cpuinfo: ParsedCpuinfo | null;
  cpuinfoEvidence: Evidence;
  arch: ArchitectureGuess | null;
  auxv: Auxv | null;
  auxvEvidence: Evidence;
  profile: BoardProfile | null;
  /** /proc/cpuinfo is another CPU's (this process is emulated): features come from auxv alone. */
  cpuinfoForeign?: boolean;
}

/** Every feature but the numeric VLEN. */
type BooleanFeature = Exclude<CpuFeatureName, 'rvvVlen'>;

const no = (value: string): Claim<boolean> => ({
  value: false,
  evidence: [{ kind: 'file', path: CPUINFO, value }],
});

function unknownFeatures(evidence: Evidence[]): CpuFeatures {
  const u = (): Claim<never> => ({ value: null, evidence });
  return {
    fp16: u(),
    dotprod: u(),
    i8mm: u(),
    bf16: u(),
    sve: u(),
    sve2: u(),
    sme: u(),
    sme2: u(),
    rvv: u(),
    rvvVlen: u(),
    ime: u(),
    ime2: u(),
    avx2: u(),
    avx512f: u(),
    avx512vnni: u(),
    avx512bf16: u(),
    avxVnni: u(),
  };
}

/** Features that cannot exist on this architecture are `false`, with the architecture as evidence. */
function notOnThisArch(features: CpuFeatures, names: CpuFeatureName[], archLine: string): void {
  for (const n of names) {
    if (n === 'rvvVlen')
      features.rvvVlen = { value: null, evidence: [{ kind: 'file', path: CPUINFO, value: archLine }] };
    else features[n] = no(archLine);
  }
}

const RISCV_NAMES: CpuFeatureName[] = ['rvv', 'rvvVlen', 'ime', 'ime2'];
const X86_NAMES: CpuFeatureName[] = ['avx2', 'avx512f', 'avx512vnni', 'avx512bf16', 'avxVnni'];

function armFeatures(src: CpuSources, features: CpuFeatures): void {
  const words = src.cpuinfo ? commonWords(src.cpuinfo.processors, 'features') : null;
  // Our name → (cpuinfo words that must all be present, the HWCAP bits that say the same).
  const map: Record<string, { words: string[]; hwcaps: Arm64HwcapName[] }> = {
    fp16: { words: ['fphp', 'asimdhp'], hwcaps: ['fphp', 'asimdhp'] },
    dotprod: { words: ['asimddp'], hwcaps: ['asimddp'] },
    i8mm: { words: ['i8mm'], hwcaps: ['i8mm'] },
    bf16: { words: ['bf16'], hwcaps: ['bf16'] },
    sve: { words: ['sve'], hwcaps: ['sve'] },
    sve2: { words: ['sve2'], hwcaps: ['sve2'] },
    sme: { words: ['sme'], hwcaps: ['sme'] },
    sme2: { words: ['sme2'], hwcaps: ['sme2'] },
  };
  for (const [name, rule] of Object.entries(map)) {
    const evidence: Evidence[] = [];
    let value: boolean | null = null;
    if (words) {
      value = rule.words.every((w) => words.has(w));
      const shown = value ? rule.words.join(' ') : rule.words.filter((w) => !words.has(w)).join(' ');
      evidence.push({ kind: 'file', path: CPUINFO, value: `Features ${value ? 'has' : 'lacks'} ${shown}` });
    }
    if (src.auxv) {
      const bits = rule.hwcaps.map((h) => arm64HasHwcap(src.auxv!, h));
      if (bits.every((b) => b !== null)) {
        const fromAuxv = bits.every(Boolean);
        // The kernel's HWCAP bits are what MNN and every other program act on; cpuinfo is printed from them, so
        // a difference means the file is stale or another CPU's: say so and follow auxv.
        if (value !== null && value !== fromAuxv) {
          evidence.unshift({
            kind: 'inferred',
            rule: `sources disagree: /proc/cpuinfo says ${value ? 'present' : 'absent'}, AT_HWCAP says ${fromAuxv ? 'present' : 'absent'}; the auxiliary vector wins (it is what MNN reads)`,
          });
        }
        value = fromAuxv;
        const inHwcap2 = rule.hwcaps.some((h) => ARM64_HWCAP_BITS[h].reg === 'hwcap2');
        const word = inHwcap2
          ? `AT_HWCAP2=${hex(src.auxv.hwcap2 ?? 0n)}`
          : `AT_HWCAP=${hex(src.auxv.hwcap ?? 0n)}`;
        evidence.push({
          kind: 'file',
          path: AUXV,
          value: `${word}: ${rule.hwcaps.join('+')} ${fromAuxv ? 'set' : 'clear'}`,
        });
      }
    }
    if (evidence.length === 0) evidence.push(src.cpuinfoEvidence, src.auxvEvidence);
    features[name as BooleanFeature] = { value, evidence };
  }
}

function coreKey(name: string | null): string {
  return (name ?? '')
    .toLowerCase()
    .replace(/^spacemit\s*,?\s*/, '')
    .replace(/^spacemit /, '');
}

function riscvFeatures(src: CpuSources, features: CpuFeatures): void {
  const first = src.cpuinfo?.processors[0];
  const isa = first?.get('isa');
  const profile = src.profile;
  if (!isa) {
    const v = src.auxv ? riscvHasLetter(src.auxv, 'v') : null;
    features.rvv = {
      value: v,
      evidence:
        v === null
          ? [src.cpuinfoEvidence, src.auxvEvidence]
          : [{ kind: 'file', path: AUXV, value: `AT_HWCAP=${hex(src.auxv!.hwcap!)}` }],
    };
  } else {
    const letters = riscvBaseLetters(isa);
    const hasV = letters.includes('v');
    const evidence: Evidence[] = [
      { kind: 'file', path: CPUINFO, value: `isa base ${isa.split('_')[0]} ${hasV ? 'has' : 'lacks'} v` },
    ];
    if (src.auxv?.hwcap != null)
      evidence.push({
        kind: 'file',
        path: AUXV,
        value: `AT_HWCAP=${hex(src.auxv.hwcap)}: V ${riscvHasLetter(src.auxv, 'v') ? 'set' : 'clear'}`,
      });
    features.rvv = { value: hasV, evidence };
  }
  const multi = isa ? riscvMultiLetter(isa) : [];
  features.fp16 = isa
    ? {
        value: multi.includes('zvfh'),
        evidence: [
          { kind: 'file', path: CPUINFO, value: `isa ${multi.includes('zvfh') ? 'has' : 'lacks'} zvfh` },
        ],
      }
    : { value: null, evidence: [src.cpuinfoEvidence] };
  features.bf16 = isa
    ? {
        value: multi.includes('zvfbfwma'),
        evidence: [
          {
            kind: 'file',
            path: CPUINFO,
            value: `isa ${multi.includes('zvfbfwma') ? 'has' : 'lacks'} zvfbfwma`,
          },
        ],
      }
    : { value: null, evidence: [src.cpuinfoEvidence] };
  for (const n of ['dotprod', 'i8mm', 'sve', 'sve2', 'sme', 'sme2'] as const)
    features[n] = no('not an Arm CPU (isa rv64…)');

  // VLEN: zvl<N>b in the isa string is authoritative; otherwise the profile's core table.
  const core = coreKey(first?.get('uarch') ?? first?.get('model name') ?? null);
  const zvl = multi
    .map((x) => /^zvl(\d+)b$/.exec(x))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]));
  if (features.rvv.value === false) features.rvvVlen = { value: null, evidence: features.rvv.evidence };
  else if (zvl.length > 0) {
    const vlen = Math.max(...zvl);
    features.rvvVlen = {
      value: vlen,
      evidence: [{ kind: 'file', path: CPUINFO, value: `isa has zvl${vlen}b` }],
    };
  } else {
    const entry = Object.entries(profile?.accelerators.vlenByCore ?? {}).find(([k]) => core.includes(k));
    features.rvvVlen = entry
      ? { value: entry[1], evidence: [{ kind: 'table', key: `core ${entry[0]}`, profile: profile!.id }] }
      : {
          value: null,
          evidence: [
            {
              kind: 'missing',
              path: CPUINFO,
              detail: `no zvl*b in isa and core "${core || 'unknown'}" not in a VLEN table`,
            },
          ],
        };
  }
  const ime = Object.entries(profile?.accelerators.imeByCore ?? {}).find(([k]) => core.includes(k));
  features.ime = ime
    ? {
        value: true,
        evidence: [
          {
            kind: 'table',
            key: `core ${ime[0]}`,
            profile: profile!.id,
            note: 'IME is not visible in the isa string',
          },
        ],
      }
    : {
        value: profile?.id.startsWith('spacemit') ? null : false,
        evidence: [{ kind: 'file', path: CPUINFO, value: `core "${core || 'unknown'}" has no known IME` }],
      };
  if (profile?.accelerators.socIme2)
    features.ime2 = {
      value: true,
      evidence: [
        {
          kind: 'table',
          key: 'soc A100 cores',
          profile: profile.id,
          note: 'IME2 on the A100 AI cores (cpu8–15), reached through /proc/set_ai_thread',
        },
      ],
    };
  else
    features.ime2 = ime
      ? { value: ime[1] === 2, evidence: [{ kind: 'table', key: `core ${ime[0]}`, profile: profile!.id }] }
      : features.ime;
}

function x86Features(src: CpuSources, features: CpuFeatures): void {
  const flags = src.cpuinfo ? commonWords(src.cpuinfo.processors, 'flags') : null;
  const map: Record<string, string> = {
    avx2: 'avx2',
    avx512f: 'avx512f',
    avx512vnni: 'avx512_vnni',
    avx512bf16: 'avx512_bf16',
    avxVnni: 'avx_vnni',
    fp16: 'avx512_fp16',
    bf16: 'avx512_bf16',
  };
  for (const [name, flag] of Object.entries(map)) {
    features[name as BooleanFeature] = flags
      ? {
          value: flags.has(flag),
          evidence: [
            { kind: 'file', path: CPUINFO, value: `flags ${flags.has(flag) ? 'has' : 'lacks'} ${flag}` },
          ],
        }
      : { value: null, evidence: [src.cpuinfoEvidence] };
  }
  for (const n of ['dotprod', 'i8mm', 'sve', 'sve2', 'sme', 'sme2'] as const)
    features[n] = no('not an Arm CPU (x86_64)');
}

export function cpuFeatures(src: CpuSources): CpuFeatures {
  const features = unknownFeatures([src.cpuinfoEvidence]);
  const arch = src.arch?.value;
  const archLine = src.arch ? `architecture ${src.arch.value} (${src.arch.because})` : '';
  if (arch === 'aarch64' || arch === 'armv7') {
    armFeatures(src, features);
    notOnThisArch(features, [...RISCV_NAMES, ...X86_NAMES], archLine);
  } else if (arch === 'riscv64') {
    riscvFeatures(src, features);
    notOnThisArch(features, X86_NAMES, archLine);
  } else if (arch === 'x86_64') {
    x86Features(src, features);
    notOnThisArch(features, RISCV_NAMES, archLine);
  }
  return features;
}

/** Group CPUs by core type and max frequency; fastest cluster first so "big first" is just `clusters[0]`. */
export function cpuClusters(fs: RootFs, cpuinfo: ParsedCpuinfo | null): CpuCluster[] {
  if (!cpuinfo) return [];
  const groups = new Map<string, CpuCluster>();
  for (const block of cpuinfo.processors) {
    const cpu = Number(block.get('processor'));
    const core = coreName(block);
    const freqPath = `/sys/devices/system/cpu/cpu${cpu}/cpufreq/cpuinfo_max_freq`;
    const freq = fs.read(freqPath);
    const khz = freq.ok && /^\d+$/.test(freq.text.trim()) ? Number(freq.text.trim()) : null;
    const key = `${core ?? '?'}@${khz ?? '?'}`;
    let group = groups.get(key);
    if (!group) {
      const part =
        block.get('cpu part') ?? block.get('uarch') ?? block.get('model name') ?? block.get('marchid');
      group = {
        cpus: [],
        coreCount: 0,
        core,
        maxFreqKHz: khz,
        evidence: [
          part
            ? { kind: 'file', path: CPUINFO, value: `processor ${cpu}: ${part}` }
            : { kind: 'missing', path: CPUINFO, detail: 'no core id line' },
          khz !== null
            ? { kind: 'file', path: freqPath, value: String(khz) }
            : freq.ok
              ? { kind: 'missing', path: freqPath, detail: 'not a number' }
              : freq.evidence,
        ],
      };
      groups.set(key, group);
    }
    group.cpus.push(cpu);
    group.coreCount++;
  }
  return [...groups.values()].sort(
    (a, b) =>
      (b.maxFreqKHz ?? 0) - (a.maxFreqKHz ?? 0) || b.coreCount - a.coreCount || a.cpus[0]! - b.cpus[0]!,
  );
}

export function cpuInfoClaims(fs: RootFs, src: CpuSources): CpuInfo {
  const first = src.cpuinfoForeign ? undefined : src.cpuinfo?.processors[0];
  const modelValue =
    first?.get('isa') ?? first?.get('model name') ?? (first ? coreName(first) : null) ?? null;
  return {
    architecture: src.arch
      ? {
          value: src.arch.value,
          evidence: src.cpuinfoForeign
            ? [{ kind: 'inferred', rule: src.arch.because }, src.auxvEvidence]
            : [{ kind: 'file', path: CPUINFO, value: src.arch.because }],
        }
      : { value: null, evidence: [src.cpuinfoEvidence] },
    logicalCpus:
      src.cpuinfo && src.cpuinfo.processors.length > 0
        ? {
            value: src.cpuinfo.processors.length,
            evidence: [
              { kind: 'file', path: CPUINFO, value: `${src.cpuinfo.processors.length} processor entries` },
            ],
          }
        : { value: null, evidence: [src.cpuinfoEvidence] },
    clusters: cpuClusters(fs, src.cpuinfo),
    model: modelValue
      ? { value: modelValue, evidence: [{ kind: 'file', path: CPUINFO, value: modelValue }] }
      : { value: null, evidence: [src.cpuinfoEvidence] },
    features: cpuFeatures(
      src.cpuinfoForeign
        ? {
            ...src,
            cpuinfo: null,
            cpuinfoEvidence: {
              kind: 'inferred',
              rule: '/proc/cpuinfo is another CPU’s: not used for features',
            },
          }
        : src,
    ),
  };
}
