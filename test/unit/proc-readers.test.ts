import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { procCpuLoad, procMemory } from '../../agent/telemetry/proc-readers.js';

function procDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-proc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// user nice system idle iowait irq softirq steal guest guest_nice
const stat = (all: number[], ...cpus: number[][]) =>
  [
    `cpu  ${all.join(' ')}`,
    ...cpus.map((c, i) => `cpu${i} ${c.join(' ')}`),
    'intr 1 2 3',
    'ctxt 99',
    '',
  ].join('\n');

test('CPU load is the busy share between two reads, per core and overall; idle and iowait count as idle', async (t) => {
  const dir = procDir(t);
  writeFileSync(
    join(dir, 'stat'),
    stat([100, 0, 100, 700, 100, 0, 0, 0, 0, 0], [50, 0, 50, 350, 50], [50, 0, 50, 350, 50]),
  );
  const load = procCpuLoad(dir);
  // The first read covers the time since boot: 200 busy of 1000.
  t.deepEqual(await load(), { currentLoad: 20, cpus: [{ load: 20 }, { load: 20 }] });
  // Then core 0 is busy for 100 ticks and core 1 idle for 100 (10 of them waiting on I/O).
  writeFileSync(
    join(dir, 'stat'),
    stat([200, 0, 100, 790, 110, 0, 0, 0, 0, 0], [150, 0, 50, 350, 50], [50, 0, 50, 440, 60]),
  );
  t.deepEqual(await load(), { currentLoad: 50, cpus: [{ load: 100 }, { load: 0 }] });
});

test('CPU load: a /proc/stat without the aggregate line is refused by name', async (t) => {
  const dir = procDir(t);
  writeFileSync(join(dir, 'stat'), 'intr 1\n');
  await t.throwsAsync(procCpuLoad(dir)(), { message: `${join(dir, 'stat')} has no aggregate cpu line` });
});

test('memory is MemTotal and MemAvailable in bytes; a meminfo without MemAvailable is refused by name', async (t) => {
  const dir = procDir(t);
  writeFileSync(
    join(dir, 'meminfo'),
    'MemTotal:        2048 kB\nMemFree:          512 kB\nMemAvailable:    1024 kB\nBuffers: 1 kB\n',
  );
  t.deepEqual(await procMemory(dir), { total: 2048 * 1024, available: 1024 * 1024 });
  writeFileSync(join(dir, 'meminfo'), 'MemTotal:        2048 kB\n');
  await t.throwsAsync(procMemory(dir), { message: `${join(dir, 'meminfo')} has no MemAvailable` });
});

test('on this machine: plausible figures from the real /proc', async (t) => {
  const load = procCpuLoad();
  await load();
  const l = await load();
  t.true(l.currentLoad >= 0 && l.currentLoad <= 100);
  t.true(l.cpus.length >= 1);
  const m = await procMemory();
  t.true(m.total > 0 && m.available > 0 && m.available <= m.total);
});
