import type { Auxv } from '../../lib/auxv.js';
import type { Claim, Evidence, MemoryInfo, ThermalZone } from '../../lib/capabilities.js';
import type { RootFs } from './root-fs.js';

const MEMINFO = '/proc/meminfo';

function meminfoLine(text: string, key: string): { bytes: number; line: string } | null {
  const m = new RegExp(`^${key}:\\s+(\\d+)\\s*kB`, 'm').exec(text);
  return m ? { bytes: Number(m[1]) * 1024, line: m[0].replace(/\s+/g, ' ') } : null;
}

export function memoryClaims(fs: RootFs, auxv: Auxv | null, auxvEvidence: Evidence): MemoryInfo {
  const r = fs.read(MEMINFO);
  const fromMeminfo = (key: string): Claim<number> => {
    if (!r.ok) return { value: null, evidence: [r.evidence] };
    const hit = meminfoLine(r.text, key);
    return hit
      ? { value: hit.bytes, evidence: [{ kind: 'file', path: MEMINFO, value: hit.line }] }
      : { value: null, evidence: [{ kind: 'missing', path: MEMINFO, detail: `no ${key} line` }] };
  };
  return {
    totalBytes: fromMeminfo('MemTotal'),
    availableBytes: fromMeminfo('MemAvailable'),
    pageSize:
      auxv?.pageSize != null
        ? {
            value: auxv.pageSize,
            evidence: [{ kind: 'file', path: '/proc/self/auxv', value: `AT_PAGESZ=${auxv.pageSize}` }],
          }
        : { value: null, evidence: [auxvEvidence] },
  };
}

export function thermalZones(fs: RootFs): ThermalZone[] {
  return fs
    .list('/sys/class/thermal')
    .filter((n) => /^thermal_zone\d+$/.test(n))
    .sort((a, b) => Number(a.slice(12)) - Number(b.slice(12)))
    .map((zone) => {
      const dir = `/sys/class/thermal/${zone}`;
      const type = fs.read(`${dir}/type`);
      const temp = fs.read(`${dir}/temp`);
      const t = temp.ok ? temp.text.trim() : '';
      return {
        zone,
        type: type.ok && type.text.trim() ? type.text.trim() : null,
        tempMilliC:
          temp.ok && /^-?\d+$/.test(t)
            ? { value: Number(t), evidence: [temp.evidence] }
            : {
                value: null,
                evidence: [
                  temp.ok ? { kind: 'missing', path: `${dir}/temp`, detail: 'not a number' } : temp.evidence,
                ],
              },
      };
    });
}
