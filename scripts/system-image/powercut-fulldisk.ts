// The full-disk case of the power-cut run: the agent's data directory moved onto a small ext4 disk of its own
// (a third virtio drive labelled MNNFULL), acknowledged settings changes made, the disk filled to the last block,
// then one more change: it must fail with an answer that says the disk is full and change nothing, while the
// agent keeps serving; after space returns, changes work again and nothing acknowledged earlier is missing.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { type Guest, healthz, sh } from './guest.js';
import { DATA_DIR, integrity } from './powercut-checks.js';
import { type AckedSetting, api, apiReady } from './powercut-load.js';

export const FULL_DISK_LABEL = 'MNNFULL';
const FULL_DISK_SIZE = '32M';

/** An empty ext4 image for the data directory to move onto (made on the host, attached to every boot). */
export function fullDiskImage(work: string): string {
  const path = join(work, 'full.ext4');
  const r = spawnSync('mkfs.ext4', ['-q', '-L', FULL_DISK_LABEL, path, FULL_DISK_SIZE], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`mkfs.ext4 for the small disk failed: ${r.stderr}`);
  return path;
}

export interface FullDiskResult {
  /** The answer to the change made on the full disk. */
  status: number;
  body: string;
  /** The answer names the full disk (not a bare 500). */
  clear: boolean;
  /** What was acknowledged before is still there and the refused change is not. */
  nothingLost: boolean;
  servedWhileFull: boolean;
  /** A change after space returned was answered 200. */
  recovered: boolean;
  integrity: string;
  integrityOk: boolean;
  details: string[];
}

const fullTag = (n: number) => `pcfull-${n}`;

export async function fullDiskCheck(
  guest: Guest,
  token: string,
  log: (l: string) => void,
): Promise<FullDiskResult> {
  const client = api(guest.port, token);
  const details: string[] = [];
  // Move the data directory onto the small disk, owner and mode kept, with the agent stopped.
  await sh(
    guest,
    `set -e
     systemctl stop mnn-edge
     mkdir -p /run/pc-full
     mount -L ${FULL_DISK_LABEL} /run/pc-full
     cp -a ${DATA_DIR}/. /run/pc-full/
     chown --reference=${DATA_DIR} /run/pc-full
     chmod --reference=${DATA_DIR} /run/pc-full
     umount /run/pc-full
     mount -L ${FULL_DISK_LABEL} ${DATA_DIR}
     systemctl start --no-block mnn-edge`,
  );
  await healthz(guest.port, 10 * 60_000);
  await apiReady(guest.port, token);
  details.push(
    `data directory on a ${FULL_DISK_SIZE} disk: ${(await sh(guest, `df -h ${DATA_DIR} | tail -1`)).trim()}`,
  );
  const acked: AckedSetting[] = [];
  for (let n = 1; n <= 3; n++) {
    const res = await client.patch('/api/config', { tags: [fullTag(n)] });
    if (res.status !== 200)
      throw new Error(`a change before the disk filled: HTTP ${res.status}: ${await res.text()}`);
    acked.push({ n, revision: ((await res.json()) as { revision: number }).revision });
  }
  // Fill it to the last block (as root: the reserved blocks too), then ask for one more change.
  await sh(guest, `dd if=/dev/zero of=${DATA_DIR}/filler bs=64k 2>/dev/null; sync; true`);
  details.push(`filled: ${(await sh(guest, `df -k ${DATA_DIR} | tail -1`)).trim()}`);
  const refused = await client.patch('/api/config', { tags: [fullTag(99)] });
  const body = await refused.text();
  log(`full disk: the change was answered HTTP ${refused.status}: ${body}`);
  const servedWhileFull = await healthz(guest.port, 60_000).then(
    () => true,
    () => false,
  );
  const config = await client.get<{ revision: number; keys: Array<{ key: string; value: unknown }> }>(
    '/api/config',
  );
  const tags = JSON.stringify(config.keys.find((k) => k.key === 'tags')?.value);
  const last = acked.at(-1)!;
  const nothingLost =
    refused.status !== 200 && config.revision === last.revision && tags === JSON.stringify([fullTag(last.n)]);
  details.push(`after the refused change: revision ${config.revision}, tags ${tags}`);
  // Space back: the next change must work, and the log must hold every acknowledged one.
  await sh(guest, `rm -f ${DATA_DIR}/filler; sync`);
  const again = await client.patch('/api/config', { tags: [fullTag(4)] });
  const recovered = again.status === 200;
  if (!recovered) details.push(`after space returned: HTTP ${again.status}: ${await again.text()}`);
  const history = await client.get<{ entries: Array<{ revision: number }> }>(
    '/api/config/history?limit=1000',
  );
  const revisions = new Set(history.entries.map((e) => e.revision));
  const missing = acked.filter((a) => !revisions.has(a.revision));
  if (missing.length > 0)
    details.push(`missing from the change log: ${missing.map((m) => m.revision).join(', ')}`);
  const checks = await integrity(guest);
  return {
    status: refused.status,
    body,
    clear: refused.status !== 200 && refused.status !== 500 && /full|space/i.test(body),
    nothingLost: nothingLost && missing.length === 0,
    servedWhileFull,
    recovered,
    integrity: checks.map((c) => `${c.db}: ${c.result}`).join('; '),
    integrityOk: checks.length > 0 && checks.every((c) => c.result === 'ok'),
    details,
  };
}
