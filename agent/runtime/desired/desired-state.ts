import type { Clock } from '../../../lib/clock.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { formatSchemaErrors, type JsonSchema, validate } from '../../../lib/schema.js';
import type { Db } from '../../../lib/sqlite/database.js';
import {
  BACKEND_TYPES,
  isSlotName,
  type Placement,
  SLOT_NAMES,
  type SlotConstraints,
  type SlotName,
  type SlotSpec,
} from '../../plan/types.js';

/**
 * Who sets a part of the desired state. Called a source, not a layer ("layer" is the architecture's word,
 * scripts/check-layers.ts, and the Yocto layer's); the table's column keeps its name `layer` (migration 20,
 * applied on devices).
 */
export type DesiredSource = 'config' | 'planner' | 'operator' | 'ota';
/** Lowest first: a later source wins where both set a field. */
export const SOURCE_PRECEDENCE: readonly DesiredSource[] = ['config', 'planner', 'operator', 'ota'];

export const slotConstraintsSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    version: { type: 'string', minLength: 1, maxLength: 64 },
    variant: { type: 'string', minLength: 1, maxLength: 64 },
    backend: { enum: BACKEND_TYPES },
    threads: { type: 'integer', minimum: 1, maximum: 256 },
    precision: { enum: ['low', 'normal', 'high'] },
    memory: { enum: ['low', 'normal', 'high'] },
  },
};

export type FieldSource = DesiredSource;

export interface SlotDocument {
  slot: SlotName;
  config: SlotSpec | undefined;
  operator: { constraints: SlotConstraints; author: string; updatedAt: number } | undefined;
  ota: { modelId: string; version: string; author: string; updatedAt: number } | undefined;
  /** What the planner chose for it. */
  planner: { status: string; instanceKey: string | undefined } | undefined;
  /** Which source decided each field of what runs. */
  sources: Partial<Record<'model' | keyof SlotConstraints, FieldSource>>;
}

export interface DesiredStateDocument {
  revision: number;
  updatedAt: number;
  slots: SlotDocument[];
}

interface Row {
  /** The source (the column's name is the migration's). */
  layer: DesiredSource;
  subject: string;
  doc: string;
  author: string;
  updated_at: number;
}

export function assertSlot(slot: unknown): SlotName {
  if (!isSlotName(slot))
    throw new MnnEdgeError(
      'EINVAL',
      `Unknown slot ${JSON.stringify(slot)} (expected one of: ${SLOT_NAMES.join(', ')})`,
    );
  return slot;
}

export function assertConstraints(value: unknown, what: string): SlotConstraints {
  const errors = validate(slotConstraintsSchema, value);
  if (errors.length > 0) throw new MnnEdgeError('EINVAL', `Invalid ${what}: ${formatSchemaErrors(errors)}`);
  return value as SlotConstraints;
}

/**
 * The one desired-state document: what the config asks for, what the planner chose, what an operator pinned
 * and which model versions OTA jobs set, each from its own source with its author. Only the runtime writes it
 * (every source goes through Runtime methods); every write bumps the revision in the same transaction.
 */
export class DesiredStateStore {
  readonly #db: Db;
  readonly #clock: Clock;

  constructor(db: Db, clock: Clock) {
    this.#db = db;
    this.#clock = clock;
  }

  revision(): { revision: number; updatedAt: number } {
    const r = this.#db.prepare('SELECT revision, updated_at FROM runtime_revision WHERE id = 1').get() as {
      revision: number;
      updated_at: number;
    };
    return { revision: r.revision, updatedAt: r.updated_at };
  }

  #write(changes: () => void): number {
    return this.#db.transaction(() => {
      changes();
      const now = this.#clock.nowMs();
      this.#db
        .prepare('UPDATE runtime_revision SET revision = revision + 1, updated_at = ? WHERE id = 1')
        .run(now);
      return this.revision().revision;
    })();
  }

  #put(source: DesiredSource, subject: string, doc: unknown, author: string): void {
    this.#db
      .prepare(
        `INSERT INTO runtime_desired (layer, subject, doc, author, updated_at) VALUES (?, ?, ?, ?, ?)
         ON CONFLICT (layer, subject) DO UPDATE SET doc = excluded.doc, author = excluded.author,
           updated_at = excluded.updated_at`,
      )
      .run(source, subject, JSON.stringify(doc), author, this.#clock.nowMs());
  }

  #rows(source: DesiredSource): Row[] {
    return this.#db
      .prepare('SELECT * FROM runtime_desired WHERE layer = ? ORDER BY subject')
      .all(source) as Row[];
  }

  /** The config source is replaced whole: slots removed from the config disappear from the document. */
  replaceConfig(slots: readonly SlotSpec[], author = 'config'): number {
    return this.#write(() => {
      this.#db.prepare("DELETE FROM runtime_desired WHERE layer = 'config'").run();
      for (const s of slots) this.#put('config', s.slot, s, author);
    });
  }

  configSlots(): SlotSpec[] {
    return this.#rows('config').map((r) => JSON.parse(r.doc) as SlotSpec);
  }

  setPin(slot: SlotName, constraints: SlotConstraints, author: string): number {
    assertSlot(slot);
    assertConstraints(constraints, `pin for ${slot}`);
    if (Object.keys(constraints).length === 0)
      throw new MnnEdgeError('EINVAL', `Empty pin for ${slot}: clear the pin instead`);
    return this.#write(() => this.#put('operator', slot, constraints, author));
  }

  clearPin(slot: SlotName): number {
    assertSlot(slot);
    return this.#write(() =>
      this.#db.prepare("DELETE FROM runtime_desired WHERE layer = 'operator' AND subject = ?").run(slot),
    );
  }

  setModelVersion(modelId: string, version: string, author: string): number {
    if (!/^[A-Za-z0-9_.:-]{1,128}$/.test(modelId))
      throw new MnnEdgeError('EINVAL', `Invalid model id ${JSON.stringify(modelId)}`);
    if (version.length === 0 || version.length > 64)
      throw new MnnEdgeError('EINVAL', `Invalid version ${JSON.stringify(version)} for ${modelId}`);
    return this.#write(() => this.#put('ota', `model:${modelId}`, { version }, author));
  }

  clearModelVersion(modelId: string): number {
    return this.#write(() =>
      this.#db
        .prepare("DELETE FROM runtime_desired WHERE layer = 'ota' AND subject = ?")
        .run(`model:${modelId}`),
    );
  }

  setPlacement(placement: Placement, author = 'planner'): number {
    return this.#write(() => this.#put('planner', 'placement', placement, author));
  }

  placement(): Placement | undefined {
    const row = this.#rows('planner').find((r) => r.subject === 'placement');
    return row ? (JSON.parse(row.doc) as Placement) : undefined;
  }

  #pins(): Map<SlotName, { constraints: SlotConstraints; author: string; updatedAt: number }> {
    return new Map(
      this.#rows('operator').map((r) => [
        r.subject as SlotName,
        { constraints: JSON.parse(r.doc) as SlotConstraints, author: r.author, updatedAt: r.updated_at },
      ]),
    );
  }

  #ota(): Map<string, { version: string; author: string; updatedAt: number }> {
    return new Map(
      this.#rows('ota').map((r) => [
        r.subject.slice('model:'.length),
        {
          version: (JSON.parse(r.doc) as { version: string }).version,
          author: r.author,
          updatedAt: r.updated_at,
        },
      ]),
    );
  }

  /** What the higher sources force on each configured slot, merged in precedence order (operator < OTA). */
  constraints(): Partial<Record<SlotName, SlotConstraints>> {
    const pins = this.#pins();
    const ota = this.#ota();
    const out: Partial<Record<SlotName, SlotConstraints>> = {};
    for (const spec of this.configSlots()) {
      const merged: SlotConstraints = { ...(pins.get(spec.slot)?.constraints ?? {}) };
      if ('model' in spec.use) {
        const v = ota.get(spec.use.model.id);
        if (v) merged.version = v.version;
      }
      if (Object.keys(merged).length > 0) out[spec.slot] = merged;
    }
    return out;
  }

  document(): DesiredStateDocument {
    const { revision, updatedAt } = this.revision();
    const config = new Map(this.configSlots().map((s) => [s.slot, s]));
    const pins = this.#pins();
    const ota = this.#ota();
    const placement = this.placement();
    const slots: SlotDocument[] = [];
    for (const slot of SLOT_NAMES) {
      const spec = config.get(slot);
      const pin = pins.get(slot);
      if (!spec && !pin) continue;
      const modelId = spec && 'model' in spec.use ? spec.use.model.id : undefined;
      const o = modelId ? ota.get(modelId) : undefined;
      const planned = placement?.slots.find((s) => s.slot === slot);
      const sources: SlotDocument['sources'] = {};
      if (spec) sources.model = 'config';
      if (spec && 'model' in spec.use) {
        if (spec.use.model.version) sources.version = 'config';
        if (spec.use.model.variant) sources.variant = 'config';
      }
      if (planned?.instanceKey) {
        for (const f of ['version', 'variant', 'backend', 'threads', 'precision', 'memory'] as const)
          sources[f] ??= 'planner';
      }
      for (const f of Object.keys(pin?.constraints ?? {}) as (keyof SlotConstraints)[])
        sources[f] = 'operator';
      if (o) sources.version = 'ota';
      slots.push({
        slot,
        config: spec,
        operator: pin,
        ota: o && modelId ? { modelId, ...o } : undefined,
        planner: planned ? { status: planned.status, instanceKey: planned.instanceKey } : undefined,
        sources,
      });
    }
    return { revision, updatedAt, slots };
  }
}
