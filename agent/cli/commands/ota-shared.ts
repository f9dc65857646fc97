// Pieces the `ota` operator commands share: reading signed documents and keys, flags, and printing statuses.

import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import { errorMessage, MnnEdgeError } from '../../../lib/errors.js';
import { INPUT_LIMITS } from '../../../lib/input-limits.js';
import { readJsonFile } from '../../../lib/json-input.js';
import { escapeControl } from '../../../lib/sanitize.js';
import type { JobStatus } from '../../../ota/jobs/job.js';
import type { OperatorBroker } from '../../../ota/tools/publish.js';
import { parsePrivateKey, type SigningKey } from '../../../ota/trust/keys.js';
import { type ParsedArgs, stringFlag, UsageError } from '../common/args.js';

export function readJson(path: string, what: string): unknown {
  return readJsonFile(path, what, { maxBytes: INPUT_LIMITS.metadataMaxBytes });
}

export function readPrivateKey(path: string): SigningKey {
  let pem: string;
  try {
    pem = readFileSync(path.trim(), 'utf8');
  } catch (err) {
    throw new MnnEdgeError(
      'ENOENT',
      `Cannot read key ${path.trim()}: ${(err as { code?: string }).code ?? errorMessage(err)}`,
    );
  }
  return parsePrivateKey(pem);
}

export function required(args: ParsedArgs, name: string): string {
  const v = stringFlag(args, name);
  if (v === undefined) throw new UsageError(`--${name} is required`);
  return v;
}

export function parseExpiry(text: string, now: number): string {
  const rel = /^(\d+)([dh])$/.exec(text);
  if (rel) return new Date(now + Number(rel[1]) * (rel[2] === 'd' ? 86_400_000 : 3_600_000)).toISOString();
  const ms = Date.parse(text);
  if (!/^\d{4}-\d{2}-\d{2}T/.test(text) || Number.isNaN(ms)) {
    throw new UsageError(`--expires expects a duration like 30d or 12h, or an ISO time, got '${text}'`);
  }
  return new Date(ms).toISOString();
}

export function printStatus(out: Writable, s: JobStatus): void {
  const bytes = s.bytesTotal ? ` ${s.bytesDone ?? 0}/${s.bytesTotal}` : '';
  // Statuses come from devices over the broker: whatever they say is shown with control characters escaped.
  out.write(
    `${escapeControl(`${s.deviceId}  ${s.jobId}  ${s.state}${bytes}${s.reason ? ` (${s.reason})` : ''}${s.message ? `: ${s.message}` : ''}`)}\n`,
  );
}

/**
 * --broker: one URL or a comma-separated list of a cluster's nodes; credentials from --username/--password
 * or MNN_EDGE_MQTT_USERNAME/PASSWORD; --mqtt-version 4|5 (left out: 5, or 3.1.1 where a broker refuses 5).
 * Moving between nodes is reported on stderr.
 */
export function operatorBroker(
  args: ParsedArgs,
  io: { env: NodeJS.ProcessEnv; stderr: Writable },
): OperatorBroker {
  const urls = required(args, 'broker')
    .split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  for (const url of urls)
    if (!/^(mqtts?|wss?):\/\//.test(url))
      throw new UsageError(`--broker must start with mqtt://, mqtts://, ws:// or wss://, got "${url}"`);
  const version = stringFlag(args, 'mqtt-version');
  if (version !== undefined && version !== '4' && version !== '5')
    throw new UsageError(`--mqtt-version expects 4 or 5, got "${version}"`);
  const username = stringFlag(args, 'username') ?? io.env['MNN_EDGE_MQTT_USERNAME'];
  const password = stringFlag(args, 'password') ?? io.env['MNN_EDGE_MQTT_PASSWORD'];
  return {
    url: urls,
    ...(version !== undefined ? { protocolVersion: Number(version) as 4 | 5 } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    onNotice: (line) => io.stderr.write(`${line}\n`),
  };
}
