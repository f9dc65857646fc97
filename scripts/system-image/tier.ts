// What the system tier's checks share: the record of results with their timings, the agent's HTTP API as a
// client on the host sees it (through the forwarded port, with the pairing token), and the agent's own
// configuration file and process in the guest.
import { setTimeout as sleep } from 'node:timers/promises';
import { type Guest, say, sh } from './guest.js';
import { guestRequest } from './host-http.js';

export class Checks {
  readonly results: string[] = [];

  /** Records one check; `since` (Date.now() when it started) adds how long it took. */
  check(name: string, ok: boolean, detail = '', since?: number): boolean {
    const took = since === undefined ? '' : ` [${((Date.now() - since) / 1000).toFixed(0)} s]`;
    this.results.push(`${ok ? 'ok  ' : 'FAIL'} ${name}${took}${detail ? `: ${detail}` : ''}`);
    say(this.results.at(-1)!);
    return ok;
  }

  /** Runs a group of checks; an exception fails the group by name and the run goes on with the next one. */
  async group(name: string, body: () => Promise<void>): Promise<boolean> {
    const started = Date.now();
    try {
      await body();
      return true;
    } catch (err) {
      this.check(name, false, (err as Error).message, started);
      return false;
    }
  }

  failed(): string[] {
    return this.results.filter((r) => r.startsWith('FAIL'));
  }
}

/** The agent as an API client on the host reaches it: the forwarded port, the pairing token as a bearer. */
export interface AgentApi {
  port: number;
  token: string;
}

export async function api<T>(
  agent: AgentApi,
  path: string,
  init: { method?: string; body?: string } = {},
): Promise<T> {
  const res = await guestRequest(agent.port, path, {
    ...init,
    headers: { Authorization: `Bearer ${agent.token}`, 'Content-Type': 'application/json' },
    timeoutMs: 120_000,
  });
  if (res.status < 200 || res.status > 299) {
    throw new Error(`${init.method ?? 'GET'} ${path}: HTTP ${res.status}: ${res.text.slice(0, 300)}`);
  }
  return JSON.parse(res.text) as T;
}

/** Polls `probe` until it returns a value (not undefined) or the budget runs out; the error names the last
 *  state seen. A budget bounds the wait on a busy machine emulating arm64; it asserts nothing. */
export async function waitFor<T>(
  what: string,
  budgetMs: number,
  probe: () => Promise<T | undefined>,
  intervalMs = 3000,
): Promise<T> {
  const deadline = Date.now() + budgetMs;
  let last = 'nothing yet';
  while (Date.now() < deadline) {
    try {
      const v = await probe();
      if (v !== undefined) return v;
      last = 'not yet';
    } catch (err) {
      last = (err as Error).message;
    }
    await sleep(intervalMs);
  }
  throw new Error(`${what}: not within ${budgetMs / 1000} s (last: ${last})`);
}

export const AGENT_JSON = '/etc/mnn-edge/agent.json';

/** Changes the agent's configuration file in the guest as an administrator would edit it (same file, same mode). */
export async function editAgentJson(
  guest: Guest,
  change: (config: Record<string, unknown>) => void,
): Promise<void> {
  const config = JSON.parse(await sh(guest, `cat ${AGENT_JSON}`)) as Record<string, unknown>;
  change(config);
  const b64 = Buffer.from(`${JSON.stringify(config, null, 2)}\n`).toString('base64');
  await sh(guest, `echo ${b64} | base64 -d > ${AGENT_JSON}`);
}

/** The unit's main process and how often systemd restarted it. */
export async function unitProcess(guest: Guest): Promise<{ pid: number; restarts: number }> {
  const out = await sh(guest, 'systemctl show mnn-edge -p MainPID -p NRestarts');
  return {
    pid: Number(/MainPID=(\d+)/.exec(out)?.[1] ?? 0),
    restarts: Number(/NRestarts=(\d+)/.exec(out)?.[1] ?? -1),
  };
}

/** The version of `modelId` serving `slot` now, from the runtime's state (instance keys are `id@version/…`). */
export async function servingVersion(
  agent: AgentApi,
  slot: string,
  modelId: string,
): Promise<string | undefined> {
  const { state } = await api<{ state: { serving: Record<string, string | undefined> } }>(
    agent,
    '/api/runtime',
  );
  const key = state.serving[slot];
  return key?.startsWith(`${modelId}@`) ? key.slice(modelId.length + 1).split('/')[0] : undefined;
}
