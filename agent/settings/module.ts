import { MnnEdgeError } from '../../lib/errors.js';
import { HttpError } from '../../lib/http-error.js';
import type { ConfigInputs } from '../config/load.js';
import { isSecretKey, redactConfig } from '../config/redact.js';
import type { AgentConfig } from '../config/schema.js';
import type { SlotsConfig } from '../config/sections/slots.js';
import type { ConfigSource, LeafChange } from '../config/sources.js';
import { CommandError, type CommandRegistry } from '../fleet/commands.js';
import { HA_SLOT_MODEL_COMMAND } from '../fleet/ha-discovery.js';
import type { RequestContext } from '../http/router.js';
import type { AgentBus, AgentContext, AgentModule } from '../module.js';
import { SLOT_NAMES } from '../plan/types.js';
import { type ChangeResult, type SettingsDeps, SettingsService } from './service.js';
import { slotChoicePatch } from './slot-select.js';
import { keyRows, withSectionDefaults } from './view.js';

// The settings' edges: the dashboard's /api/config (read, change with If-Match, change log), the fleet's
// `get-config` / `set-config` commands and the retained `config` document. All of them change through
// SettingsService, so every path validates, logs and applies the same way.

export interface SettingsModuleDeps {
  inputs: ConfigInputs;
  sources: Map<string, ConfigSource>;
  commands: Pick<CommandRegistry, 'register'>;
  /** The reload path (agent/reload.ts). */
  apply(next: AgentConfig, reason: string): Promise<Record<string, unknown>>;
  check?: SettingsDeps['check'];
  /** Publishes the retained `config` document (the fleet's, once connected). */
  publish?(doc: Record<string, unknown>): void;
  /** The agent's bus: the configuration the settings run on goes out as `settings.config`. */
  bus?: AgentBus;
}

export interface SettingsModule extends AgentModule {
  service(): SettingsService | undefined;
}

/** The effective configuration as the fleet's `config` document and `get-config` show it. */
export function configDocument(s: SettingsService): Record<string, unknown> {
  return {
    revision: s.revision,
    effective: redactConfig(withSectionDefaults(s.config)),
    overlay: redactConfig(s.overlay),
    sources: Object.fromEntries(s.sources),
    ...(s.problem ? { problem: s.problem } : {}),
  };
}

function whoOf(ctx: RequestContext): string {
  return `dashboard (${ctx.auth?.method ?? 'anonymous'} from ${ctx.req.socket.remoteAddress ?? 'unknown'})`;
}

/** If-Match: "7" (or 7, or W/"7"); the body's expectRevision works as well. */
function expectedRevision(ctx: RequestContext, body: Record<string, unknown>): number | undefined {
  const header = ctx.req.headers['if-match'];
  const raw = typeof header === 'string' ? header.replace(/^W\//, '').replace(/"/g, '').trim() : undefined;
  const value = raw ?? body['expectRevision'];
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0)
    throw new HttpError(
      400,
      'invalid_request',
      `If-Match / expectRevision must be a revision number, got ${JSON.stringify(value)}`,
    );
  return n;
}

/** Settings errors as HTTP answers: the schema's message (400), a conflict or a refusal (409). */
export function settingsHttpError(err: unknown, revision: number): never {
  if (err instanceof MnnEdgeError) {
    const etag = { ETag: `"${revision}"` };
    if (err.code === 'ECONFLICT') throw new HttpError(409, 'revision_conflict', err.message, etag);
    if (err.code === 'ECONFIG' || err.code === 'EINVAL')
      throw new HttpError(400, 'invalid_setting', err.message);
    if (err.code === 'ESLOT' || err.code === 'EWYOMING' || err.code === 'EBACKEND')
      throw new HttpError(409, 'refused', err.message, etag);
    // 507 Insufficient Storage (RFC 4918): the server cannot store what is needed to complete the request.
    if (err.code === 'ESTORAGE') throw new HttpError(507, 'insufficient_storage', err.message, etag);
  }
  throw err;
}

/** The same errors as command errors for the fleet. */
function commandError(err: unknown): never {
  if (err instanceof MnnEdgeError) {
    if (err.code === 'ECONFLICT') throw new CommandError('ECONFLICT', err.message);
    if (err.code === 'ECONFIG' || err.code === 'EINVAL') throw new CommandError('EPARAMS', err.message);
    if (err.code === 'ESLOT' || err.code === 'EWYOMING' || err.code === 'EBACKEND' || err.code === 'ESTORAGE')
      throw new CommandError('EREFUSED', err.message);
  }
  throw err;
}

function registerRoutes(ctx: AgentContext, service: SettingsService): Array<() => void> {
  const r = ctx.router;
  return [
    r.route('GET', '/api/config', (c) =>
      c.json(
        200,
        {
          revision: service.revision,
          file: service.configFile,
          ...(service.problem ? { problem: service.problem } : {}),
          keys: keyRows(service.config, service.sources),
        },
        { ETag: `"${service.revision}"` },
      ),
    ),
    r.route('PATCH', '/api/config', async (c) => {
      const body = await c.readJson();
      if (typeof body !== 'object' || body === null || Array.isArray(body))
        throw new HttpError(
          400,
          'invalid_request',
          'Expected a JSON object: a merge patch of the configuration',
        );
      const b = body as Record<string, unknown>;
      const expectRevision = expectedRevision(c, b);
      const { expectRevision: _drop, ...patch } = b;
      try {
        const result = await service.change({
          patch,
          who: whoOf(c),
          ...(expectRevision !== undefined ? { expectRevision } : {}),
        });
        c.json(200, result, { ETag: `"${result.revision}"` });
      } catch (err) {
        settingsHttpError(err, service.revision);
      }
    }),
    r.route('GET', '/api/config/history', (c) => {
      const limit = Math.min(1000, Math.max(1, Number(c.url.searchParams.get('limit') ?? 100) || 100));
      c.json(200, { revision: service.revision, entries: service.history(limit).map(redactEntry) });
    }),
  ];
}

/** A change's old and new values are masked by the key they belong to (the entry's own `key` field is a path,
 *  not a secret), and inside a list that is one leaf (voice.tools.mcp's tokens) by the keys of its items. */
function redactEntry<T extends { changes: readonly LeafChange[]; overlay: unknown }>(e: T): T {
  const changes = e.changes.map((c) =>
    isSecretKey(c.key)
      ? { ...c, old: redactLeaf(c.old), new: redactLeaf(c.new) }
      : { ...c, old: redactConfig(c.old), new: redactConfig(c.new) },
  );
  return { ...e, changes, overlay: redactConfig(e.overlay) };
}

function redactLeaf(v: unknown): unknown {
  return typeof v === 'string' && !v.startsWith('/') ? '***' : v;
}

const setConfigParams = {
  type: 'object',
  additionalProperties: false,
  required: ['patch'],
  properties: {
    patch: { type: 'object' },
    expectRevision: { type: 'integer', minimum: 0 },
    operator: { type: 'string', minLength: 1, maxLength: 128 },
  },
} as const;

const selectSlotModelParams = {
  type: 'object',
  additionalProperties: false,
  required: ['slot', 'model'],
  properties: {
    slot: { enum: SLOT_NAMES },
    model: { type: 'string', minLength: 1, maxLength: 160 },
  },
} as const;

/** Home Assistant's model select: a choice (a model id, a built-in, `none`) through the same change path. */
async function selectSlotModel(s: SettingsService, params: { slot: string; model: string }) {
  try {
    const patch = slotChoicePatch(s.config['slots'] as SlotsConfig | undefined, params.slot, params.model);
    const result = await s.change({ patch, who: 'home assistant' });
    return { ...result, config: configDocument(s) };
  } catch (err) {
    commandError(err);
  }
}

function registerCommands(
  commands: Pick<CommandRegistry, 'register'>,
  service: () => SettingsService | undefined,
) {
  const get = () => {
    const s = service();
    if (!s) throw new CommandError('EHANDLER', 'The settings are not loaded yet');
    return s;
  };
  commands.register({
    name: 'get-config',
    summary:
      'the effective configuration (secrets masked), where each key came from, and the overlay revision',
    handler: () => configDocument(get()),
  });
  commands.register<{ patch: Record<string, unknown>; expectRevision?: number; operator?: string }>({
    name: 'set-config',
    summary:
      'change run-time settings (a merge patch: slots, voice, vision, telemetry, Wyoming, tags); expectRevision guards',
    params: setConfigParams,
    timeoutMs: 10 * 60_000,
    async handler(params) {
      const s = get();
      let result: ChangeResult;
      try {
        result = await s.change({
          patch: params.patch,
          who: `fleet operator${params.operator ? ` ${params.operator}` : ''}`,
          ...(params.expectRevision !== undefined ? { expectRevision: params.expectRevision } : {}),
        });
      } catch (err) {
        commandError(err);
      }
      return { ...result, config: configDocument(s) };
    },
  });
  commands.register<{ slot: string; model: string }>({
    name: HA_SLOT_MODEL_COMMAND,
    summary:
      "Home Assistant's model select: serve a slot with an installed model, a built-in or none (logged as home assistant)",
    params: selectSlotModelParams,
    timeoutMs: 10 * 60_000,
    handler: (params) => selectSlotModel(get(), params),
  });
}

export function createSettingsModule(deps: SettingsModuleDeps): SettingsModule {
  let service: SettingsService | undefined;
  const removers: Array<() => void> = [];
  const publish = () => {
    if (service) deps.publish?.(configDocument(service));
  };
  registerCommands(deps.commands, () => service);
  return {
    name: 'settings',
    service: () => service,
    start(ctx) {
      service = new SettingsService({
        inputs: deps.inputs,
        config: ctx.config,
        sources: deps.sources,
        apply: deps.apply,
        ...(deps.check ? { check: deps.check } : {}),
        onConfig: (config) => deps.bus?.emit('settings.config', { config }),
        now: () => new Date(ctx.clock.nowMs()),
        onChange: (result) => {
          ctx.logger.info('settings changed', {
            revision: result.revision,
            keys: result.changes.map((c) => c.key),
            restartRequired: result.restartRequired,
          });
          publish();
        },
      });
      if (service.problem) ctx.logger.error('run-time settings not used', { problem: service.problem });
      deps.bus?.emit('settings.config', { config: service.config });
      removers.push(...registerRoutes(ctx, service));
      publish();
    },
    stop() {
      for (const r of removers.splice(0)) r();
      service = undefined;
    },
  };
}
