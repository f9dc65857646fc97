import { MnnEdgeError } from '../../lib/errors.js';
import { type ConfigInputs, composeConfig } from '../config/load.js';
import { applyModes, assertOverlayKeys } from '../config/overlay-keys.js';
import type { HistoryEntry } from '../config/overlay-store.js';
import { restoreMaskedSecrets } from '../config/redact.js';
import type { AgentConfig } from '../config/schema.js';
import { type SlotsConfig, slotSpecsFromConfig } from '../config/sections/slots.js';
import {
  type ConfigSource,
  diffLeaves,
  isPlainObject,
  type JsonObject,
  type LeafChange,
  mergePatch,
  pruneEmpty,
} from '../config/sources.js';

// One owner for run-time changes. The dashboard, the fleet's `set-config` and Home Assistant's selects all call
// change(): the patch is checked against the same schema as the file (same messages), then against the board
// (a slot's model installed, of a task that fits, placeable), and only then written as the next overlay
// revision and applied through the reload path SIGHUP takes. If applying fails, the previous revision is written
// back and applied again, so a change is all or nothing.

export interface ChangeRequest {
  /** An RFC 7386 merge patch over the overlay: `null` hands a key back to the file. */
  patch: unknown;
  /** Who asks: shown in the change log. */
  who: string;
  /** Refuse unless the overlay is at this revision (two operators must not overwrite each other). */
  expectRevision?: number;
}

export interface ChangeResult {
  revision: number;
  changes: LeafChange[];
  /** Keys in effect now. */
  applied: string[];
  /** Keys stored but in effect only after the next start. */
  restartRequired: string[];
  /** What the reload path did (the new placement revision among it). */
  reload?: Record<string, unknown>;
  note?: string;
}

export interface SettingsDeps {
  inputs: ConfigInputs;
  config: AgentConfig;
  sources: Map<string, ConfigSource>;
  /** The reload path: applies `next` (slots, tags, workloads, telemetry, Wyoming) to the running agent. */
  apply(next: AgentConfig, reason: string): Promise<Record<string, unknown>>;
  /** Throws with the reason when the board cannot take `next` (slot model missing, wrong task, no room). */
  check?(next: AgentConfig, changes: readonly LeafChange[]): Promise<void>;
  now?(): Date;
  onChange?(result: ChangeResult): void;
  /** Told each configuration the service runs on from here (a change before it is applied, a rollback, a
   *  re-read), so that what reads the slots elsewhere follows without holding the service. */
  onConfig?(config: AgentConfig): void;
}

/** A slot named in a patch replaces the overlay's entry for that slot whole (see overlayOnFile). */
function slotPatch(overlay: JsonObject, patch: JsonObject): JsonObject {
  const slots = patch['slots'];
  if (!isPlainObject(slots)) return patch;
  const base = isPlainObject(overlay['slots']) ? overlay['slots'] : {};
  const merged: JsonObject = { ...base };
  for (const [slot, v] of Object.entries(slots)) {
    if (v === null) delete merged[slot];
    else merged[slot] = v;
  }
  return { ...patch, slots: Object.keys(merged).length > 0 ? merged : null };
}

export class SettingsService {
  #inputs: ConfigInputs;
  #config: AgentConfig;
  #sources: Map<string, ConfigSource>;
  #queue: Promise<unknown> = Promise.resolve();
  readonly #deps: SettingsDeps;

  constructor(deps: SettingsDeps) {
    this.#deps = deps;
    this.#inputs = deps.inputs;
    this.#config = deps.config;
    this.#sources = deps.sources;
  }

  get config(): AgentConfig {
    return this.#config;
  }

  get sources(): ReadonlyMap<string, ConfigSource> {
    return this.#sources;
  }

  get revision(): number {
    return this.#inputs.overlay.revision;
  }

  get overlay(): JsonObject {
    return this.#inputs.overlay.overlay;
  }

  /** Why the overlay file on disk is not what runs (damaged, newer format), or undefined. */
  get problem(): string | undefined {
    return this.#inputs.overlay.problem;
  }

  get configFile(): string {
    return this.#inputs.source;
  }

  history(limit = 200): HistoryEntry[] {
    return this.#inputs.store.history(limit);
  }

  /** SIGHUP re-read the file (and the overlay): what runs now. */
  reloaded(loaded: { inputs: ConfigInputs; config: AgentConfig; sources: Map<string, ConfigSource> }): void {
    this.#inputs = loaded.inputs;
    this.#use(loaded.config, loaded.sources);
  }

  #use(config: AgentConfig, sources: Map<string, ConfigSource>): void {
    this.#config = config;
    this.#sources = sources;
    this.#deps.onConfig?.(config);
  }

  /** Changes are applied one at a time, in the order they arrive. */
  change(request: ChangeRequest): Promise<ChangeResult> {
    const run = this.#queue.then(() => this.#change(request));
    this.#queue = run.catch(() => undefined);
    return run;
  }

  async #change(request: ChangeRequest): Promise<ChangeResult> {
    const current = this.#inputs.overlay;
    if (request.expectRevision !== undefined && request.expectRevision !== current.revision) {
      throw new MnnEdgeError(
        'ECONFLICT',
        `The settings are at revision ${current.revision}, not ${request.expectRevision}: someone else changed them first; read them again and retry`,
        { revision: current.revision },
      );
    }
    if (!isPlainObject(request.patch))
      throw new MnnEdgeError(
        'EINVAL',
        'A settings change is a JSON object (a merge patch of the configuration)',
      );
    assertOverlayKeys(request.patch, this.#inputs.source);
    const patch = restoreMaskedSecrets(request.patch, this.#config) as JsonObject;
    const nextOverlay = pruneEmpty(
      mergePatch(current.overlay, slotPatch(current.overlay, patch)),
    ) as JsonObject;
    const prev = this.#config;
    // The same schema and messages as the file; then the rules across slots (voice.tts or voice.omni).
    const composed = composeConfig(this.#inputs, nextOverlay);
    slotSpecsFromConfig(composed.config['slots'] as SlotsConfig | undefined);
    const changes = diffLeaves(prev, composed.config);
    if (changes.length === 0)
      return { revision: current.revision, changes: [], applied: [], restartRequired: [] };
    await this.#deps.check?.(composed.config, changes);

    const at = this.#deps.now?.() ?? new Date();
    const entry = commitOrExplain(
      () => this.#inputs.store.commit(nextOverlay, request.who, changes, at),
      current.revision,
      this.#inputs.store.dataDir,
    );
    this.#inputs = { ...this.#inputs, overlay: { revision: entry.revision, overlay: nextOverlay } };
    const modes = applyModes(changes.map((c) => c.key));
    let reload: Record<string, unknown>;
    try {
      this.#use(composed.config, composed.sources);
      reload = await this.#deps.apply(
        composed.config,
        `settings revision ${entry.revision} by ${request.who}`,
      );
    } catch (err) {
      await this.#rollBack(current.overlay, prev, request.who, err);
      throw err;
    }
    const result: ChangeResult = {
      revision: entry.revision,
      changes,
      applied: modes.live,
      restartRequired: modes.restart,
      reload,
      ...(entry.note ? { note: entry.note } : {}),
    };
    this.#deps.onChange?.(result);
    return result;
  }

  /** Applying failed half way: the previous overlay becomes the next revision and runs again. */
  async #rollBack(overlay: JsonObject, prev: AgentConfig, who: string, err: unknown): Promise<void> {
    const back = diffLeaves(this.#config, prev);
    const entry = this.#inputs.store.commit(
      overlay,
      `rollback of a change by ${who}`,
      back,
      this.#deps.now?.() ?? new Date(),
    );
    this.#inputs = { ...this.#inputs, overlay: { revision: entry.revision, overlay } };
    const composed = composeConfig(this.#inputs, overlay);
    this.#use(composed.config, composed.sources);
    await this.#deps.apply(prev, `rollback: ${(err as Error).message}`).catch(() => undefined);
  }
}

/** What the disk says when it cannot take a write: full, over quota, or remounted read-only after errors. */
const STORAGE_CODES: Record<string, string> = {
  ENOSPC: 'the disk is full',
  EDQUOT: "the service user's disk quota is used up",
  EROFS: 'the file system is read-only',
};

/** A change the disk refused: nothing was changed (the store is all or nothing), and the answer says why in the
 *  user's terms instead of a bare internal error. */
function commitOrExplain<T>(commit: () => T, revision: number, dataDir: string): T {
  try {
    return commit();
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    const why = typeof code === 'string' ? STORAGE_CODES[code] : undefined;
    if (why === undefined) throw err;
    throw new MnnEdgeError(
      'ESTORAGE',
      `The change was not saved: ${why} (${code} writing the run-time settings in ${dataDir}); nothing was changed, the settings are still at revision ${revision}. Free space there and try again.`,
      { code, revision },
    );
  }
}
