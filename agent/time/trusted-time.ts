import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/log.js';
import type { SyncProbe } from './sync-probe.js';

// Boards without a battery-backed RTC boot at 1970 or at the image's build date, and keep that wrong time until
// NTP answers (if it ever does, on an offline site). Anything that compares wall-clock times across a reboot
// (certificate validity, OTA schedules, telemetry order) needs a time that never goes backwards. The agent keeps
// a lower bound of the real time: the last time known to be good, persisted in the store, advanced by the
// monotonic clock while the process runs. `trustedNow()` is never earlier than that bound.
// Intervals and timeouts must use Clock.monotonicMs (and Node timers, which run on the monotonic clock).

export type ClockState = 'synchronized' | 'unsynchronized' | 'behind' | 'unknown';

export interface ClockStatus {
  state: ClockState;
  /** True only when an NTP client has confirmed the clock. */
  synchronized: boolean;
  evidence: string;
  wallMs: number;
  trustedMs: number;
  /** trustedMs - wallMs: how far the wall clock lags the known lower bound (0 when it does not). */
  lagMs: number;
  lastKnownGoodMs: number | undefined;
}

export interface KeyValue {
  get<T>(key: string): T | undefined;
  set(key: string, value: unknown): void;
}

export interface TrustedTimeOptions {
  kv: KeyValue;
  clock: Clock;
  probe: SyncProbe;
  /** No correct clock can read earlier than this release was made; defaults to RELEASE_FLOOR_MS. */
  floorMs?: number;
  /** How often the lower bound is written to the store while running (default 10 min). */
  persistIntervalMs?: number;
  logger?: Logger;
}

export const LAST_KNOWN_GOOD_KEY = 'time.lastKnownGood';
/** 2026-11-01T00:00:00Z: earlier than this release; bump with each release. */
export const RELEASE_FLOOR_MS = Date.UTC(2026, 10, 1);

interface StoredTime {
  ms: number;
  /** 'ntp': the wall clock while synchronised; 'carried': an earlier bound advanced by monotonic time. */
  source: 'ntp' | 'carried';
}

export interface TrustedTime {
  trustedNow(): number;
  clockStatus(): ClockStatus;
  /** Persist the current lower bound now (also done periodically and on stop). */
  checkpoint(): void;
  start(): void;
  stop(): void;
}

function readStored(kv: KeyValue): StoredTime | undefined {
  const v = kv.get<unknown>(LAST_KNOWN_GOOD_KEY);
  if (typeof v !== 'object' || v === null) return undefined;
  const { ms, source } = v as Partial<StoredTime>;
  if (typeof ms !== 'number' || !Number.isFinite(ms) || (source !== 'ntp' && source !== 'carried'))
    return undefined;
  return { ms, source };
}

export function createTrustedTime(options: TrustedTimeOptions): TrustedTime {
  const { kv, clock, probe } = options;
  const floorMs = options.floorMs ?? RELEASE_FLOOR_MS;
  const persistIntervalMs = options.persistIntervalMs ?? 10 * 60_000;
  // The bound is (baseMs at baseMono), advanced by monotonic time: it keeps counting while the wall clock is wrong.
  let stored = readStored(kv);
  let baseMs = Math.max(floorMs, stored?.ms ?? 0);
  let baseMono = clock.monotonicMs();
  let timer: NodeJS.Timeout | undefined;

  const boundMs = () => baseMs + (clock.monotonicMs() - baseMono);
  const trustedNow = () => Math.max(clock.nowMs(), boundMs());

  const clockStatus = (): ClockStatus => {
    const wallMs = clock.nowMs();
    const bound = boundMs();
    const observed = probe();
    let state: ClockState;
    if (observed.synchronized === true) state = 'synchronized';
    else if (wallMs < bound) state = 'behind';
    else state = observed.synchronized === false ? 'unsynchronized' : 'unknown';
    const evidence =
      state === 'behind'
        ? `wall clock ${new Date(wallMs).toISOString()} is earlier than the last known good time ${new Date(bound).toISOString()}; ${observed.evidence}`
        : observed.evidence;
    // An NTP-confirmed clock is authoritative even below a bound that an earlier, wrong clock may have left.
    const trustedMs = state === 'synchronized' ? wallMs : Math.max(wallMs, bound);
    return {
      state,
      synchronized: state === 'synchronized',
      evidence,
      wallMs,
      trustedMs,
      lagMs: Math.max(0, trustedMs - wallMs),
      lastKnownGoodMs: stored?.ms,
    };
  };

  const checkpoint = () => {
    const status = clockStatus();
    const next: StoredTime = status.synchronized
      ? { ms: status.wallMs, source: 'ntp' }
      : { ms: boundMs(), source: 'carried' };
    // Without NTP the bound only moves forward; with NTP the clock is right and may correct a bound that ran ahead.
    if (!status.synchronized && stored !== undefined && next.ms <= stored.ms) return;
    kv.set(LAST_KNOWN_GOOD_KEY, next);
    if (status.synchronized && stored?.source !== 'ntp') {
      options.logger?.info('clock synchronised', { wallMs: status.wallMs, evidence: status.evidence });
    }
    stored = next;
    if (status.synchronized) {
      baseMs = next.ms;
      baseMono = clock.monotonicMs();
    }
  };

  return {
    trustedNow,
    clockStatus,
    checkpoint,
    start() {
      const status = clockStatus();
      if (status.state === 'behind') {
        options.logger?.warn('wall clock is behind the last known good time', {
          wallMs: status.wallMs,
          trustedMs: status.trustedMs,
        });
      }
      checkpoint();
      timer ??= setInterval(checkpoint, persistIntervalMs);
      timer.unref();
    },
    stop() {
      if (timer !== undefined) clearInterval(timer);
      timer = undefined;
      checkpoint();
    },
  };
}
