import type { BoardProfile } from '../../board-support/types.js';
import type { Capabilities, Claim, Evidence, StepStatus } from '../../lib/capabilities.js';

// The human-readable `mnn-edge detect` report: one line per fact, the evidence in brackets, unknowns spelled out.

export function describeEvidence(e: Evidence): string {
  switch (e.kind) {
    case 'file':
      return `${e.path}: ${e.value.length > 60 ? e.value.slice(0, 57) + '...' : e.value}`;
    case 'missing':
      return `${e.path} missing${e.detail ? ` (${e.detail})` : ''}`;
    case 'unreadable':
      return `${e.path}: ${e.error}`;
    case 'node':
      return `${e.path} ${e.present ? 'present' : 'absent'}${e.via === 'present.txt' ? ' (present.txt)' : ''}`;
    case 'table':
      return `table ${e.profile}/${e.key}${e.note ? ` (${e.note})` : ''}`;
    case 'inferred':
      return `inferred: ${e.rule}`;
  }
}

function show<T>(c: Claim<T>, format: (v: T) => string = String): string {
  const why = c.evidence.slice(0, 2).map(describeEvidence).join('; ');
  return `${c.value === null ? 'unknown' : format(c.value)}${why ? `  [${why}]` : ''}`;
}

const STEP_MARK: Record<StepStatus, string> = { ok: 'ok  ', fail: 'FAIL', skip: 'skip', unchecked: '  ? ' };

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(0)} MiB`;

/** The report; with the matched board-support profile, its thread advice and quirks are appended. */
export function formatReport(caps: Capabilities, profile?: BoardProfile | null): string {
  const out: string[] = [];
  const line = (label: string, value: string) => out.push(`  ${label.padEnd(14)} ${value}`);
  out.push(`Board (root ${caps.root})`);
  line('vendor', show(caps.board.vendor));
  line('model', show(caps.board.model));
  line(
    'compatible',
    show(caps.board.compatible, (v) => v.join(' ')),
  );
  out.push('SoC');
  line('family', show(caps.soc.family));
  line('name', show(caps.soc.name));
  line('soc_id', show(caps.soc.socId));
  line('revision', show(caps.soc.revision));
  out.push('CPU');
  line('architecture', show(caps.cpu.architecture));
  line('logical cpus', show(caps.cpu.logicalCpus));
  for (const c of caps.cpu.clusters)
    line(
      'cluster',
      `${c.coreCount} × ${c.core ?? 'unknown core'} @ ${c.maxFreqKHz ? `${(c.maxFreqKHz / 1000).toFixed(0)} MHz` : 'unknown max clock'} (cpu ${c.cpus.join(',')})`,
    );
  const f = caps.cpu.features;
  const on = Object.entries(f)
    .filter(([, c]) => c.value === true)
    .map(([k]) => k);
  const unknown = Object.entries(f)
    .filter(([k, c]) => c.value === null && (k !== 'rvvVlen' || f.rvv.value === true))
    .map(([k]) => k);
  line('features', on.length ? on.join(' ') : '(none of the tracked features)');
  if (f.rvv.value)
    line(
      'rvv vlen',
      show(f.rvvVlen, (v) => `${v} bits`),
    );
  if (unknown.length) line('unknown', unknown.join(' '));
  out.push('Memory');
  line('total', show(caps.memory.totalBytes, mib));
  line('available', show(caps.memory.availableBytes, mib));
  line(
    'page size',
    show(caps.memory.pageSize, (v) => `${v} bytes`),
  );
  out.push('Accelerators');
  if (caps.accelerators.length === 0) line('(none)', '');
  for (const a of caps.accelerators) {
    switch (a.kind) {
      case 'hexagon-htp':
        line('Hexagon HTP', `arch ${show(a.arch)}`);
        line('', `NSPs ${show(a.nspCount)}`);
        line(
          '',
          `FastRPC ${a.fastrpcNodes.join(', ') || 'none'}; QNN ${a.qnnLibraries.map((l) => l.split('/').pop()).join(', ') || 'none'}`,
        );
        break;
      case 'rknpu':
        line('Rockchip NPU', `driver ${show(a.driver)}`);
        line('', `version ${show(a.driverVersion)}`);
        line('', `cores ${show(a.cores)}`);
        line('', `node ${show(a.deviceNode)}`);
        break;
      case 'nvidia-gpu':
        line('NVIDIA GPU', show(a.name));
        line('', `compute capability ${show(a.computeCapability)}`);
        line('', `L4T ${show(a.l4tRelease)}; JetPack ${a.jetpack.value ?? 'unknown'}`);
        line('', `DLA ${show(a.dlaCount)}`);
        break;
      case 'gpu':
        line('GPU', `${a.vendor}: ${show(a.name)}`);
        line(
          '',
          `nodes ${a.deviceNodes.join(', ')}; OpenCL ${a.openclLibraries.join(', ') || 'none'}; Vulkan ${a.vulkanLibraries.join(', ') || 'none'}`,
        );
        break;
      case 'spacemit-ai':
        line(
          'SpacemiT AI',
          `nodes ${a.deviceNodes.join(', ')}; set_ai_thread gate ${a.aiThreadGate.value ? 'yes' : 'no'}`,
        );
        break;
    }
  }
  if (caps.thermal.length) {
    out.push('Thermal');
    for (const z of caps.thermal)
      line(
        z.zone,
        `${z.type ?? 'unknown type'} ${z.tempMilliC.value === null ? 'unknown' : `${(z.tempMilliC.value / 1000).toFixed(1)} °C`}`,
      );
  }
  out.push(`MNN backends${caps.engineBackends ? ` (engine: ${caps.engineBackends.join(', ')})` : ''}`);
  for (const b of caps.backends) {
    line(b.backend, `${b.usable ? 'usable  ' : 'unusable'}  ${b.reasons.join('; ')}`);
    for (const s of b.steps ?? []) line('', `  ${STEP_MARK[s.status]} ${s.step.padEnd(11)} ${s.detail}`);
  }
  if (profile) {
    out.push(`Board support: ${profile.title}`);
    line('threads', `${profile.threads.placement}: ${profile.threads.advice}`);
    for (const q of profile.quirks) line('quirk', q);
    for (const p of profile.priors)
      line(
        'prior',
        `${p.backend} ${p.model} (${p.workload}): ${Object.entries(p.metrics)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}`,
      );
  }
  return out.join('\n') + '\n';
}
