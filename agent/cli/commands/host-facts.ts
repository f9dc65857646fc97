// What the running system says about itself (OS image, kernel, machine), shown by `mnn-edge detect` on the live
// board so that a report pasted into a bug names the image it came from. systeminformation is imported on demand:
// only this short-lived CLI process pays for it, never the daemon (bench/idle).

export interface HostFacts {
  os: string;
  kernel: string;
  arch: string;
  machine: string | null;
}

function joined(...parts: (string | undefined)[]): string {
  return parts
    .map((p) => p?.trim())
    .filter((p): p is string => Boolean(p))
    .join(' ');
}

export async function readHostFacts(): Promise<HostFacts> {
  const { default: si } = await import('systeminformation');
  const [os, system] = await Promise.all([si.osInfo(), si.system()]);
  const machine = joined(system.manufacturer, system.model);
  return {
    os: joined(os.distro, os.release, os.codename ? `(${os.codename})` : undefined) || 'unknown',
    kernel: os.kernel || 'unknown',
    arch: os.arch || 'unknown',
    machine: machine.length > 0 ? machine + (system.virtual ? ' (virtual)' : '') : null,
  };
}

export function formatHostFacts(facts: HostFacts): string {
  const line = (label: string, value: string) => `  ${label.padEnd(14)} ${value}`;
  return [
    'Host (this running system)',
    line('os', facts.os),
    line('kernel', `${facts.kernel} ${facts.arch}`),
    line('machine', facts.machine ?? 'unknown'),
  ].join('\n');
}
