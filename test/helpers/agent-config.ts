// The configuration of an agent that a test or benchmark runs in its own process: a fresh data directory, no
// board root (detection finds nothing to read), HTTP on a free loopback port. Callers add their slots and
// workload settings on top.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import type { HttpConfig } from '../../agent/config/sections/core.js';

export function loopbackAgentConfig(
  prefix: string,
  http: Partial<HttpConfig> = {},
): { dataDir: string; config: AgentConfig } {
  const dataDir = mkdtempSync(join(tmpdir(), prefix));
  const base = defaultConfig({});
  return {
    dataDir,
    config: {
      ...base,
      dataDir,
      root: join(dataDir, 'no-root'),
      http: { ...base.http, bind: '127.0.0.1', port: 0, ...http },
    },
  };
}
