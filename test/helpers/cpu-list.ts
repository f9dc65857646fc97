// Linux CPU lists ("0-3,6", as in /proc/*/status Cpus_allowed_list and /sys/devices/system/cpu/online).

/** The CPUs a list names, in order; an empty or malformed part names none. */
export function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.split(',')) {
    const [a, b] = part.split('-').map(Number);
    if (a === undefined || Number.isNaN(a)) continue;
    for (let c = a; c <= (b ?? a); c++) cpus.push(c);
  }
  return cpus;
}

/** The Cpus_allowed_list of a /proc/<pid>/status or /proc/<pid>/task/<tid>/status text. */
export function cpusAllowed(status: string): number[] {
  return parseCpuList(/^Cpus_allowed_list:\s*(\S+)$/m.exec(status)?.[1] ?? '');
}
