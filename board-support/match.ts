import type { Claim, Evidence } from '../lib/capabilities.js';
import type { Fact, IdentityFacts } from './types.js';

// Small pure helpers shared by the profiles' matchers.

export function findCompatible(facts: IdentityFacts, pattern: RegExp): Fact | undefined {
  return facts.compatible.find((c) => pattern.test(c.value));
}

/**
 * soc0/machine names the SoC on Qualcomm kernels, but some kernels fill it from the DT model (Tegra): a value equal
 * to the model, or containing spaces, is a board name and is ignored.
 */
export function soc0MachineName(facts: IdentityFacts): Fact | null {
  const m = facts.soc0.machine;
  if (!m) return null;
  if (facts.dtModel && m.value === facts.dtModel.value) return null;
  if (/\s/.test(m.value)) return null;
  return m;
}

export function tableEvidence(profile: string, key: string, note?: string): Evidence {
  return note === undefined ? { kind: 'table', key, profile } : { kind: 'table', key, profile, note };
}

export function claim<T>(value: T | null, ...evidence: Evidence[]): Claim<T> {
  return { value, evidence };
}

/**
 * The SoC name by trust: soc0/machine (the running SoC's own report), then soc0/soc_id via a table, then the
 * compatible string (which names a sibling die on several Qualcomm boards).
 */
export function resolveSocName(
  facts: IdentityFacts,
  profile: string,
  socIds: Record<string, string>,
  fromCompatible: Fact | undefined,
  compatibleToName: (value: string) => string,
): Claim<string> {
  const machine = soc0MachineName(facts);
  if (machine) return claim(machine.value.toUpperCase(), machine.evidence);
  const id = facts.soc0.socId;
  if (id && socIds[id.value])
    return claim(socIds[id.value]!, id.evidence, tableEvidence(profile, `soc_id ${id.value}`));
  if (fromCompatible) return claim(compatibleToName(fromCompatible.value), fromCompatible.evidence);
  return claim<string>(null, ...facts.compatible.map((c) => c.evidence));
}

/** `vendor,name` → `NAME` (e.g. `rockchip,rk3588` → `RK3588`). */
export function upperModel(compatible: string): string {
  return (compatible.split(',')[1] ?? compatible).toUpperCase();
}
