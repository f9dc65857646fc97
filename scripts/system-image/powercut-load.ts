// The power-cut run's write load from the host: settings changes through the agent's HTTP API, one after
// another. A change answered 200 is acknowledged, and so must survive any cut that comes after the answer; a
// change in flight when the power goes may land or not, and is not counted.
export interface AckedSetting {
  /** The value's sequence number: the change set `tags` to [`pc-<n>`]. */
  n: number;
  revision: number;
}

export interface SettingsLoad {
  /** Changes sent (answered or not). */
  sent: number;
  acked: AckedSetting[];
  /** Answers other than 200 while the guest was up (each one a finding, with its body). */
  refused: string[];
  stop: () => Promise<void>;
}

export const tagOf = (n: number) => `pc-${n}`;

export function api(port: number, token: string) {
  const base = `http://127.0.0.1:${port}`;
  const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
  return {
    get: async <T>(path: string): Promise<T> => {
      const res = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(60_000) });
      if (!res.ok) throw new Error(`GET ${path}: HTTP ${res.status}: ${await res.text()}`);
      return (await res.json()) as T;
    },
    patch: (path: string, body: unknown, timeoutMs = 60_000) =>
      fetch(`${base}${path}`, {
        method: 'PATCH',
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      }),
    post: (path: string, body: unknown, timeoutMs = 60_000) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        headers,
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(timeoutMs),
      }),
  };
}

/** Starts changing `tags` from sequence `firstN` on, one change at a time, until stopped (or the guest is gone). */
export function startSettingsLoad(port: number, token: string, firstN: number): SettingsLoad {
  const client = api(port, token);
  const load: SettingsLoad = { sent: 0, acked: [], refused: [], stop: async () => {} };
  let running = true;
  const loop = (async () => {
    for (let n = firstN; running; n++) {
      load.sent++;
      try {
        const res = await client.patch('/api/config', { tags: [tagOf(n)] });
        const text = await res.text();
        if (res.status === 200)
          load.acked.push({ n, revision: (JSON.parse(text) as { revision: number }).revision });
        else load.refused.push(`HTTP ${res.status}: ${text.slice(0, 300)}`);
      } catch {
        // The guest is gone (cut) or did not answer: not acknowledged, not counted.
        if (!running) return;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
  })();
  load.stop = async () => {
    running = false;
    await loop;
  };
  return load;
}

/** /healthz answers while the agent is still starting; its API answers 503 `starting` until it is up. */
export async function apiReady(port: number, token: string, budgetMs = 10 * 60_000): Promise<void> {
  const client = api(port, token);
  const deadline = Date.now() + budgetMs;
  for (;;) {
    try {
      await client.get('/api/config');
      return;
    } catch (err) {
      if (Date.now() > deadline)
        throw new Error(`the API did not answer in ${budgetMs / 1000} s: ${(err as Error).message}`);
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}
