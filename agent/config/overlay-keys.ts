import { MnnEdgeError } from '../../lib/errors.js';
import { leaves } from './sources.js';

// Which keys the run-time overlay may hold, and how a change to each takes effect. Everything else (HTTP bind,
// port and TLS files, MQTT broker and credentials, data directory, secrets and tokens, the OTA trust roots) is
// changed only in the file: a mistake made from the dashboard there could lock the user out of the dashboard.
//
//   live     applied by the reload path at once (the same one SIGHUP takes)
//   restart  stored at once, takes effect at the next start; the answer and the Settings page say so

export type ApplyMode = 'live' | 'restart';

export interface OverlayKey {
  /** A key path; it also covers everything below it (`slots` covers `slots.voice.llm.model`). */
  key: string;
  apply: ApplyMode;
}

export const OVERLAY_KEYS: readonly OverlayKey[] = [
  { key: 'slots', apply: 'live' },
  { key: 'tags', apply: 'live' },
  { key: 'voice.systemPrompt', apply: 'live' },
  { key: 'voice.maxNewTokens', apply: 'live' },
  { key: 'voice.maxHistoryMessages', apply: 'live' },
  { key: 'voice.wake.keywords', apply: 'live' },
  { key: 'voice.wake', apply: 'restart' },
  { key: 'voice.tools.enabled', apply: 'live' },
  { key: 'voice.tools.builtins', apply: 'live' },
  { key: 'voice.tools.allowRemoteActs', apply: 'live' },
  { key: 'voice.tools.timezone', apply: 'live' },
  { key: 'voice.tools.maxTimers', apply: 'live' },
  { key: 'voice.tools.limits', apply: 'live' },
  // MCP servers hold tokens: written masked from the Settings page (a "***" sent back keeps the stored token,
  // restoreMaskedSecrets), never read back; the servers are connected at the next start.
  { key: 'voice.tools.mcp', apply: 'restart' },
  { key: 'voice.enabled', apply: 'restart' },
  { key: 'vision.maxNewTokens', apply: 'live' },
  { key: 'vision.watch.prompt', apply: 'live' },
  { key: 'vision.watch.intervalS', apply: 'live' },
  { key: 'vision.watch.onSceneChange', apply: 'live' },
  { key: 'vision.watch.enabled', apply: 'restart' },
  { key: 'vision.enabled', apply: 'restart' },
  { key: 'telemetry.sampleIntervalMs', apply: 'live' },
  { key: 'telemetry.publishIntervalMs', apply: 'live' },
  { key: 'wyoming.enabled', apply: 'live' },
  { key: 'wyoming.port', apply: 'live' },
  { key: 'wyoming.languages', apply: 'live' },
  { key: 'runtime', apply: 'restart' },
  { key: 'log.level', apply: 'restart' },
];

export function overlayKeyOf(path: string): OverlayKey | undefined {
  return OVERLAY_KEYS.find((k) => path === k.key || path.startsWith(`${k.key}.`));
}

/** The leaf paths of a patch or overlay that the overlay may not hold, each with the reason. */
export function fileOnlyKeys(value: unknown): string[] {
  // A `null` (remove) counts like a value: removing a file-only key from the overlay is never needed.
  return leaves(value)
    .map(([path]) => path)
    .filter((path) => overlayKeyOf(path) === undefined);
}

export function assertOverlayKeys(value: unknown, fileName: string): void {
  const bad = fileOnlyKeys(value);
  if (bad.length === 0) return;
  throw new MnnEdgeError(
    'ECONFIG',
    bad
      .map((k) => `${k}: is changed only in the configuration file (${fileName}), not at run time`)
      .join('; '),
    { keys: bad },
  );
}

/** Splits changed keys by how they take effect. */
export function applyModes(keys: readonly string[]): { live: string[]; restart: string[] } {
  const live: string[] = [];
  const restart: string[] = [];
  for (const k of keys) (overlayKeyOf(k)?.apply === 'live' ? live : restart).push(k);
  return { live, restart };
}
