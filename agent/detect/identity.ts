import type { Fact, IdentityFacts } from '../../board-support/types.js';
import type { Claim, Evidence } from '../../lib/capabilities.js';
import { type ArchitectureGuess, coreName, type ParsedCpuinfo } from './cpuinfo.js';
import { isPrintable, type RootFs } from './root-fs.js';

// Identity strings as the board reports them. The device tree lives at /sys/firmware/devicetree/base; the
// /proc/device-tree symlink to it is only tried when the former is absent (older kernels, some fixtures).

const DT_DIRS = ['/sys/firmware/devicetree/base', '/proc/device-tree'] as const;

export interface DeviceTree {
  compatible: Fact[];
  model: Fact | null;
  /** Evidence when the DT was missing or unreadable (x86, junk), so the report can say why it is empty. */
  problems: Evidence[];
}

function readDt(fs: RootFs, name: 'compatible' | 'model') {
  const problems: Evidence[] = [];
  for (const dir of DT_DIRS) {
    const r = fs.read(`${dir}/${name}`);
    if (r.ok) return { result: r, problems };
    problems.push(r.evidence);
    if (r.evidence.kind === 'unreadable') break;
  }
  return { result: null, problems };
}

export function readDeviceTree(fs: RootFs): DeviceTree {
  const problems: Evidence[] = [];
  const compat = readDt(fs, 'compatible');
  const compatible: Fact[] = [];
  if (compat.result) {
    const path = compat.result.path;
    const values = compat.result.text.split('\0').map((s) => s.trim());
    const valid = values.filter((v) => /^[A-Za-z0-9][\w.+-]*,[\w.+-]+$/.test(v));
    for (const value of valid) compatible.push({ value, evidence: { kind: 'file', path, value } });
    if (valid.length === 0)
      problems.push({
        kind: 'missing',
        path,
        detail: 'no vendor,name entries (empty or not a compatible list)',
      });
  } else problems.push(...compat.problems);
  const modelRead = readDt(fs, 'model');
  let model: Fact | null = null;
  if (modelRead.result) {
    const value = modelRead.result.text.split('\0')[0]!.trim();
    if (isPrintable(value)) model = { value, evidence: { kind: 'file', path: modelRead.result.path, value } };
    else
      problems.push({ kind: 'missing', path: modelRead.result.path, detail: 'not a printable model string' });
  } else problems.push(...modelRead.problems);
  return { compatible, model, problems };
}

/** A one-line sysfs/procfs value as a Fact, or the evidence of why there is none. */
export function readFact(fs: RootFs, path: string): { fact: Fact | null; evidence: Evidence } {
  const r = fs.read(path);
  if (!r.ok) return { fact: null, evidence: r.evidence };
  const value = r.text.replaceAll('\0', '').trim().split('\n')[0]!.trim();
  if (!isPrintable(value))
    return { fact: null, evidence: { kind: 'missing', path, detail: 'empty or not printable' } };
  return {
    fact: { value, evidence: { kind: 'file', path, value } },
    evidence: { kind: 'file', path, value },
  };
}

export function factClaim(f: { fact: Fact | null; evidence: Evidence }): Claim<string> {
  return { value: f.fact?.value ?? null, evidence: [f.evidence] };
}

export interface Soc0 {
  machine: ReturnType<typeof readFact>;
  family: ReturnType<typeof readFact>;
  socId: ReturnType<typeof readFact>;
  revision: ReturnType<typeof readFact>;
}

export function readSoc0(fs: RootFs): Soc0 {
  return {
    machine: readFact(fs, '/sys/devices/soc0/machine'),
    family: readFact(fs, '/sys/devices/soc0/family'),
    socId: readFact(fs, '/sys/devices/soc0/soc_id'),
    revision: readFact(fs, '/sys/devices/soc0/revision'),
  };
}

function cpuFact(cpu: ParsedCpuinfo | null, key: string): Fact | null {
  const value = cpu?.processors[0]?.get(key);
  if (!value || !isPrintable(value)) return null;
  return { value, evidence: { kind: 'file', path: '/proc/cpuinfo', value: `${key}: ${value}` } };
}

export function identityFacts(
  dt: DeviceTree,
  soc0: Soc0,
  cpu: ParsedCpuinfo | null,
  arch: ArchitectureGuess | null,
  tegraRelease: Fact | null,
): IdentityFacts {
  return {
    architecture: arch?.value ?? null,
    compatible: dt.compatible,
    dtModel: dt.model,
    soc0: {
      machine: soc0.machine.fact,
      family: soc0.family.fact,
      socId: soc0.socId.fact,
      revision: soc0.revision.fact,
    },
    cpu: {
      modelName: cpuFact(cpu, 'model name'),
      uarch: cpuFact(cpu, 'uarch'),
      marchid: cpuFact(cpu, 'marchid'),
      vendorId: cpuFact(cpu, 'vendor_id'),
      part: cpu?.processors[0] ? factOrNull(coreName(cpu.processors[0]), cpu) : null,
    },
    tegraRelease,
  };
}

function factOrNull(name: string | null, cpu: ParsedCpuinfo): Fact | null {
  const part = cpu.processors[0]?.get('cpu part');
  if (!name || !part) return null;
  return { value: name, evidence: { kind: 'file', path: '/proc/cpuinfo', value: `CPU part: ${part}` } };
}

/** Device-tree vendor prefixes → how the vendor writes its name. */
const DT_VENDORS: Record<string, string> = {
  qcom: 'Qualcomm',
  radxa: 'Radxa',
  rockchip: 'Rockchip',
  nvidia: 'NVIDIA',
  raspberrypi: 'Raspberry Pi',
  brcm: 'Broadcom',
  spacemit: 'SpacemiT',
  bananapi: 'Banana Pi',
  starfive: 'StarFive',
  milkv: 'Milk-V',
  pine64: 'Pine64',
  friendlyarm: 'FriendlyElec',
  khadas: 'Khadas',
  orangepi: 'Xunlong (Orange Pi)',
};

export function boardVendor(
  dt: DeviceTree,
  dmiVendor: { fact: Fact | null; evidence: Evidence },
): Claim<string> {
  const first = dt.compatible[0];
  if (first) {
    const prefix = first.value.split(',')[0]!;
    return { value: DT_VENDORS[prefix] ?? prefix, evidence: [first.evidence] };
  }
  if (dmiVendor.fact) return { value: dmiVendor.fact.value, evidence: [dmiVendor.evidence] };
  return { value: null, evidence: [...dt.problems.slice(0, 1), dmiVendor.evidence] };
}

/** L4T release from /etc/nv_tegra_release: `# R36 (release), REVISION: 4.7, …` → `R36.4.7`. */
export function readTegraRelease(fs: RootFs): { fact: Fact | null; evidence: Evidence } {
  const r = fs.read('/etc/nv_tegra_release');
  if (!r.ok) return { fact: null, evidence: r.evidence };
  const m = /#\s*R(\d+)\s*\(release\),\s*REVISION:\s*(\d+(?:\.\d+)?)/.exec(r.text);
  if (!m)
    return {
      fact: null,
      evidence: { kind: 'missing', path: r.path, detail: 'no "# R<n> (release), REVISION: x.y" line' },
    };
  const value = `R${m[1]}.${m[2]}`;
  return {
    fact: { value, evidence: { kind: 'file', path: r.path, value: m[0] } },
    evidence: { kind: 'file', path: r.path, value: m[0] },
  };
}
