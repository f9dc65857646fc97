// Pieces the `ota` operator commands share: reading signed documents and keys, flags, and printing statuses.

import { readFileSync } from 'node:fs';
import type { Writable } from 'node:stream';
import type { JobStatus } from '../../../ota/job.js';
import { parsePrivateKey, type SigningKey } from '../../../ota/keys.js';
import { errorMessage, MnnEdgeError } from '../../common/errors.js';
import { INPUT_LIMITS } from '../../common/input-limits.js';
import { readJsonFile } from '../../common/json-input.js';
import { escapeControl } from '../../common/sanitize.js';
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
