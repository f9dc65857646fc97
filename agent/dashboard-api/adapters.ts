import { ENGINE_HELP, type EngineAvailability } from '../../engine/src/loader.js';
import type { TypedEventEmitter } from '../../lib/typed-events.js';
import type { ModelStore } from '../../models/store/model-store.js';
import type { TelemetryHistory } from '../telemetry/history.js';
import type { TelemetrySnapshot } from '../telemetry/service.js';
import type {
  BrokerStatus,
  EngineStatus,
  InstallProgressView,
  ModelsPort,
  OtaPort,
  TelemetryPort,
  TelemetrySample,
} from './ports.js';

export { placementPortFrom } from '../runtime/placement-port.js';

// Adapters from the agent's real modules to the dashboard's ports, for the composition root. Each one only
// reads the module's public API, so the dashboard stays testable with plain values and the modules stay
// unaware of it.

export function engineStatusFrom(availability: () => EngineAvailability): () => EngineStatus {
  return () => {
    const a = availability();
    if (!a.available) return { available: false, reason: a.reason, fix: ENGINE_HELP };
    return {
      available: true,
      version: a.info.mnnVersion,
      backends: a.info.backends.filter((b) => b.compiledIn && b.usable).map((b) => b.name),
    };
  };
}

/** Installed packages from the store, and imports in progress from its progress events (bounded list). */
export function modelsPortFrom(
  store: ModelStore,
  now: () => number = Date.now,
  keep = 8,
): ModelsPort & { dispose(): void } {
  const installs = new Map<string, InstallProgressView>();
  const offProgress = store.on('progress', (p) => {
    const existing = installs.get(p.source);
    installs.delete(p.source);
    installs.set(p.source, {
      ref: p.source,
      step: `copying ${p.file}`,
      doneBytes: p.bytesDone,
      totalBytes: p.bytesTotal ?? p.bytesDone,
      startedAt: existing?.startedAt ?? new Date(now()).toISOString(),
    });
    while (installs.size > keep) installs.delete(installs.keys().next().value!);
  });
  const offInstalled = store.on('installed', () => installs.clear());
  return {
    installed: () =>
      store.list().map((p) => ({
        id: p.id,
        version: p.version,
        kind: p.task,
        sizeBytes: p.sizeBytes,
        variants: p.manifest.variants.map((v) => ({
          id: v.name,
          quant: v.precision,
          backends: [v.requirements.backend],
        })),
        installedAt: new Date(p.installedAt).toISOString(),
        ...(p.manifest.provenance
          ? {
              pulledFrom: {
                hub: p.manifest.provenance.hub,
                repo: p.manifest.provenance.repo,
                commit: p.manifest.provenance.commit,
                trust: p.manifest.provenance.trust,
              },
            }
          : {}),
      })),
    installs: () => [...installs.values()].reverse(),
    dispose() {
      offProgress();
      offInstalled();
    },
  };
}

/** What the dashboard reads of OTA's job journal (ota/jobs/journal.ts; compose.ts hands it over). */
export interface OtaJournal {
  list(limit: number): ReadonlyArray<{
    jobId: string;
    state: string;
    packageId: string;
    packageVersion: string;
    bytesDone: number;
    bytesTotal?: number;
    reason?: string;
    message?: string;
    createdAt: number;
    updatedAt: number;
  }>;
}

export function otaPortFrom(journal: OtaJournal): OtaPort {
  return {
    jobs: (limit) =>
      journal.list(limit).map((e) => ({
        jobId: e.jobId,
        kind: 'model',
        target: `${e.packageId}@${e.packageVersion}`,
        state: e.state,
        ...(e.bytesTotal ? { progress: { doneBytes: e.bytesDone, totalBytes: e.bytesTotal } } : {}),
        ...(e.reason || e.message ? { reason: [e.reason, e.message].filter(Boolean).join(': ') } : {}),
        createdAt: new Date(e.createdAt).toISOString(),
        updatedAt: new Date(e.updatedAt).toISOString(),
      })),
  };
}

/**
 * Live samples fan out from here: the telemetry service publishes each sampling round (its onSnapshot, or a
 * sampler tap), and every open chart socket subscribes. Keeps only the latest sample. A polled feed
 * (pollWhileWatched) runs only while a chart socket is open, and once more whenever latest() is read: an agent
 * nobody is watching does not wake up to feed charts that are not there.
 */
export class SampleHub {
  readonly #listeners = new Set<(s: TelemetrySample) => void>();
  readonly #polls = new Set<{ poll: () => void; ms: number; timer?: NodeJS.Timeout }>();
  #latest: TelemetrySample | undefined;

  publish(sample: TelemetrySample): void {
    this.#latest = sample;
    for (const l of this.#listeners) l(sample);
  }

  subscribe(listener: (s: TelemetrySample) => void): () => void {
    this.#listeners.add(listener);
    if (this.#listeners.size === 1) for (const p of this.#polls) this.#startPoll(p);
    return () => {
      if (!this.#listeners.delete(listener) || this.#listeners.size > 0) return;
      for (const p of this.#polls) this.#stopPoll(p);
    };
  }

  latest(): TelemetrySample | undefined {
    for (const p of this.#polls) p.poll();
    return this.#latest;
  }

  get watchers(): number {
    return this.#listeners.size;
  }

  /** Calls `poll` every `ms` while anyone subscribes; returns the function that removes it. */
  pollWhileWatched(poll: () => void, ms: number): () => void {
    const p: { poll: () => void; ms: number; timer?: NodeJS.Timeout } = { poll, ms };
    this.#polls.add(p);
    if (this.#listeners.size > 0) this.#startPoll(p);
    return () => {
      this.#stopPoll(p);
      this.#polls.delete(p);
    };
  }

  #startPoll(p: { poll: () => void; ms: number; timer?: NodeJS.Timeout }): void {
    if (p.timer) return;
    p.timer = setInterval(p.poll, p.ms);
    p.timer.unref();
  }

  #stopPoll(p: { poll: () => void; timer?: NodeJS.Timeout }): void {
    if (p.timer) clearInterval(p.timer);
    p.timer = undefined;
  }
}

export function telemetryPortFrom(
  history: Pick<TelemetryHistory, 'metrics' | 'query'>,
  hub: SampleHub,
): TelemetryPort {
  return {
    metrics: () => {
      const names = new Set(history.metrics());
      for (const k of Object.keys(hub.latest()?.values ?? {})) names.add(k);
      return [...names].sort();
    },
    history: (q) => history.query(q),
    subscribe: (l) => hub.subscribe(l),
    latest: () => hub.latest(),
  };
}

/**
 * Feeds the hub from the telemetry service's interval snapshots (their means), polled while a chart is open
 * (live charts then move once per publish interval) and whenever the latest sample is asked for.
 */
export function feedFromSnapshots(
  hub: SampleHub,
  latest: () => TelemetrySnapshot | undefined,
  pollMs = 1000,
): () => void {
  let lastTs: number | undefined;
  return hub.pollWhileWatched(() => {
    const s = latest();
    if (s === undefined || s.ts === lastTs) return;
    lastTs = s.ts;
    hub.publish({
      t: s.ts,
      values: Object.fromEntries(Object.entries(s.metrics).map(([k, v]) => [k, v.mean])),
    });
  }, pollMs);
}

/** The fleet connection as the Overview shows it: connected since, or unreachable with the last reason. */
export function brokerStatusFrom(
  fleet: {
    readonly connected: boolean;
    readonly brokerUrl: string | undefined;
    readonly events: Pick<
      TypedEventEmitter<{ connected: { url: string }; disconnected: { reason: string } }>,
      'on'
    >;
    /** The link's own account (last error, next attempt), when the fleet agent has one. */
    linkStatus?(): { state: string; lastError?: string; retryAtMs?: number } | undefined;
  },
  now: () => number = Date.now,
): { status(): BrokerStatus; dispose(): void } {
  let since = now();
  let lastError = 'not connected yet';
  const offUp = fleet.events.on('connected', () => {
    since = now();
  });
  const offDown = fleet.events.on('disconnected', ({ reason }) => {
    lastError = reason;
  });
  return {
    status() {
      const url = fleet.brokerUrl;
      if (url === undefined) return { state: 'disabled', reason: 'No MQTT broker is configured (mqtt.url)' };
      if (fleet.connected) return { state: 'connected', url, sinceMs: since };
      const link = fleet.linkStatus?.();
      const retryAt = link?.retryAtMs;
      return {
        state: 'unreachable',
        url,
        error: link?.lastError ?? lastError,
        ...(retryAt !== undefined ? { retryInS: Math.max(0, Math.ceil((retryAt - now()) / 1000)) } : {}),
      };
    },
    dispose() {
      offUp();
      offDown();
    },
  };
}
