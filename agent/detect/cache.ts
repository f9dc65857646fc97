import { chmodSync, mkdirSync, readFileSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Capabilities } from '../../lib/capabilities.js';
import { writeFileDurable } from '../../lib/durable-fs.js';
import { errorMessage, MnnEdgeError } from '../../lib/errors.js';
import { formatSchemaErrors, validate } from '../../lib/schema.js';
import { capabilitiesSchema } from './schema.js';

// A privileged ExecStartPre runs `mnn-edge detect --write-cache FILE` so that root-only facts (debugfs NPU
// version, soc0 serial) reach the unprivileged agent, which reads the file back with readCapabilitiesCache.

export function writeCapabilitiesCache(path: string, caps: Capabilities): void {
  mkdirSync(dirname(path), { recursive: true });
  // World-readable on purpose: the agent runs as another user and the document holds no secrets. The mode is
  // set after writing because the unit's UMask=0027 also applies to the privileged ExecStartPre and would turn
  // the 0644 of open() into a root-owned 0640 the agent cannot read.
  writeFileDurable(path, JSON.stringify(caps, null, 2) + '\n', 0o644);
  chmodSync(path, 0o644);
}

export function readCapabilitiesCache(path: string): Capabilities {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : errorMessage(err);
    throw new MnnEdgeError('ECACHE', `cannot read capability cache ${path}: ${why}`, { path });
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new MnnEdgeError('ECACHE', `capability cache ${path} is not JSON: ${errorMessage(err)}`, { path });
  }
  // A cache written by another agent version is a distinct, common case: say so rather than list every field.
  const version = (doc as { schemaVersion?: unknown } | null)?.schemaVersion;
  if (version !== 1)
    throw new MnnEdgeError(
      'ECACHE',
      `capability cache ${path} has schemaVersion ${JSON.stringify(version)}; this agent reads 1 (run detect again)`,
      { path },
    );
  const errors = validate(capabilitiesSchema, doc);
  if (errors.length > 0)
    throw new MnnEdgeError(
      'ECACHE',
      `capability cache ${path} is invalid: ${formatSchemaErrors(errors.slice(0, 3))}`,
      {
        path,
      },
    );
  return doc as Capabilities;
}
