import type { Capabilities } from '../lib/capabilities.js';
import { arm64Generic, riscvGeneric, x86Host } from './profiles/generic.js';
import { jetsonOrin } from './profiles/jetson.js';
import { qcs6490, qcs9075 } from './profiles/qualcomm.js';
import { rk3588 } from './profiles/rockchip.js';
import { spacemitK1, spacemitK3 } from './profiles/spacemit.js';
import type { BoardProfile, IdentityFacts, SocIdentification } from './types.js';

export { jetpackForL4t } from './profiles/jetson.js';
export type * from './types.js';

/** Every profile, most specific first: identification stops at the first match, generic ones come last. */
export const profiles: readonly BoardProfile[] = [
  qcs9075,
  qcs6490,
  rk3588,
  jetsonOrin,
  spacemitK1,
  spacemitK3,
  riscvGeneric,
  arm64Generic,
  x86Host,
];

export function profileById(id: string): BoardProfile | undefined {
  return profiles.find((p) => p.id === id);
}

/** The first profile whose rules match the identity facts, with the SoC identification it produced. */
export function identifySoc(
  facts: IdentityFacts,
  list: readonly BoardProfile[] = profiles,
): { profile: BoardProfile; soc: SocIdentification } | null {
  for (const profile of list) {
    const soc = profile.identify(facts);
    if (soc) return { profile, soc };
  }
  return null;
}

/** The profile for a capability document: its detected family, else the generic one for its architecture. */
export function matchProfile(caps: Capabilities): BoardProfile | null {
  const family = caps.soc.family.value;
  if (family) return profileById(family) ?? null;
  switch (caps.cpu.architecture.value) {
    case 'aarch64':
      return arm64Generic;
    case 'riscv64':
      return riscvGeneric;
    case 'x86_64':
      return x86Host;
    default:
      return null;
  }
}
