// The built-in tools, one ToolSource named `builtin`: the time and date on the board's clock, timers (set, list,
// cancel; persisted and spoken when due, timers.ts), what the camera sees (the vision slot), and announcing a
// sentence on the board's speaker. Each is listed only while it is switched on (voice.tools.builtins) and its
// workload can serve it now: no camera tool without a camera, no announce without the board's own voice loop.
// Bad arguments are answered as failed outcomes with the reason, for the model to read.
import { errorMessage } from '../../../lib/errors.js';
import type { ToolsConfig } from '../../config/sections/tools.js';
import type { BoardSpeaker } from './board-speaker.js';
import type { Timer, TimerService } from './timers.js';
import type { ToolCallContext, ToolDefinition, ToolOutcome, ToolSource } from './types.js';

/** The camera tool's way to the vision slot; `missing` says why it cannot answer now. */
export interface CameraLook {
  missing(): string | undefined;
  describe(question: string, signal: AbortSignal): Promise<string>;
}

export interface BuiltinDeps {
  settings: () => ToolsConfig;
  now: () => number;
  timers?: TimerService;
  camera?: CameraLook;
  speaker?: BoardSpeaker;
}

const DEFAULT_QUESTION = 'Describe what you see in one or two short sentences.';
export const MAX_ANNOUNCE_CHARS = 500;

const noArgs = { type: 'object', properties: {}, additionalProperties: false };

const DEFINITIONS = {
  get_time: {
    name: 'get_time',
    description: "The current date and time on the board's clock, in its time zone.",
    parameters: noArgs,
  },
  set_timer: {
    name: 'set_timer',
    description:
      'Start a countdown timer; the board says when it is done. Give the duration in hours, minutes and/or seconds.',
    parameters: {
      type: 'object',
      properties: {
        hours: { type: 'number', minimum: 0 },
        minutes: { type: 'number', minimum: 0 },
        seconds: { type: 'number', minimum: 0 },
        label: { type: 'string', description: 'What the timer is for, e.g. "pasta"' },
      },
    },
  },
  list_timers: {
    name: 'list_timers',
    description: 'The running timers and how long each has left.',
    parameters: noArgs,
  },
  cancel_timer: {
    name: 'cancel_timer',
    description:
      'Cancel a running timer, by its id or its label (the only running one when neither is given).',
    parameters: { type: 'object', properties: { id: { type: 'string' }, label: { type: 'string' } } },
  },
  describe_camera: {
    name: 'describe_camera',
    description: "What the board's camera sees now; optionally a question about it.",
    parameters: { type: 'object', properties: { question: { type: 'string' } } },
  },
  announce: {
    name: 'announce',
    description: "Say a sentence out loud on the board's speaker.",
    parameters: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    acts: true,
  },
} satisfies Record<string, ToolDefinition>;

type BuiltinName = keyof typeof DEFINITIONS;

/** "1 hour 5 minutes", "45 seconds": how a duration is said. */
export function spokenDuration(ms: number): string {
  let s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const part = (n: number, unit: string) => (n === 0 ? [] : [`${n} ${unit}${n === 1 ? '' : 's'}`]);
  const parts = [...part(h, 'hour'), ...part(m, 'minute'), ...(h === 0 ? part(s, 'second') : [])];
  return parts.length > 0 ? parts.join(' ') : '0 seconds';
}

const ok = (content: string, data?: unknown): ToolOutcome => ({
  ok: true,
  content,
  ...(data !== undefined ? { data } : {}),
});
const refuse = (content: string): ToolOutcome => ({ ok: false, content });

function numberArg(args: Record<string, unknown>, key: string): number | string {
  const v = args[key];
  if (v === undefined || v === null || v === '') return 0;
  const n = typeof v === 'string' ? Number(v) : v;
  if (typeof n !== 'number' || !Number.isFinite(n) || n < 0) return `${key} must be a number of 0 or more`;
  return n;
}

function stringArg(args: Record<string, unknown>, key: string): string | undefined {
  const v = args[key];
  return typeof v === 'string' && v.trim().length > 0 ? v.trim() : undefined;
}

export class BuiltinTools implements ToolSource {
  readonly name = 'builtin';
  readonly #d: BuiltinDeps;

  constructor(deps: BuiltinDeps) {
    this.#d = deps;
  }

  async list(): Promise<readonly ToolDefinition[]> {
    const on = this.#d.settings().builtins;
    const out: ToolDefinition[] = [];
    if (on.time) out.push(DEFINITIONS.get_time);
    if (on.timers && this.#d.timers)
      out.push(DEFINITIONS.set_timer, DEFINITIONS.list_timers, DEFINITIONS.cancel_timer);
    if (on.camera && this.#d.camera && this.#d.camera.missing() === undefined)
      out.push(DEFINITIONS.describe_camera);
    if (on.announce && this.#d.speaker?.available) out.push(DEFINITIONS.announce);
    return out;
  }

  async call(tool: string, args: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolOutcome> {
    if (!(tool in DEFINITIONS)) return refuse(`builtin has no tool ${JSON.stringify(tool)}`);
    // A call is checked against the list of now, not the one the turn started with: a tool switched off since
    // (or one that acts, for a remote caller) is refused here too.
    const listed = await this.list();
    const def = listed.find((d) => d.name === tool);
    if (!def) return refuse(`${tool} is switched off or cannot serve now`);
    if (def.acts && ctx.remote && !this.#d.settings().allowRemoteActs)
      return refuse(`${tool} acts on the board and is off for remote callers (voice.tools.allowRemoteActs)`);
    try {
      return await this.#run(tool as BuiltinName, args, ctx);
    } catch (err) {
      return refuse(errorMessage(err));
    }
  }

  #format(ms: number, style: Intl.DateTimeFormatOptions): { text: string; timezone: string } {
    const zone = this.#d.settings().timezone;
    try {
      const f = new Intl.DateTimeFormat('en-US', { ...style, ...(zone ? { timeZone: zone } : {}) });
      return { text: f.format(ms), timezone: f.resolvedOptions().timeZone };
    } catch {
      // An unknown zone name in the settings: the board's own zone, rather than no answer.
      const f = new Intl.DateTimeFormat('en-US', style);
      return { text: f.format(ms), timezone: f.resolvedOptions().timeZone };
    }
  }

  #clockTime(ms: number): string {
    return this.#format(ms, { hour: 'numeric', minute: '2-digit' }).text;
  }

  async #run(tool: BuiltinName, args: Record<string, unknown>, ctx: ToolCallContext): Promise<ToolOutcome> {
    switch (tool) {
      case 'get_time': {
        const now = this.#d.now();
        const { text, timezone } = this.#format(now, { dateStyle: 'full', timeStyle: 'short' });
        return ok(`It is ${text} (${timezone}).`, { iso: new Date(now).toISOString(), timezone });
      }
      case 'set_timer':
        return this.#setTimer(args, ctx);
      case 'list_timers': {
        const running = this.#d.timers!.running();
        if (running.length === 0) return ok('No timers are running.', { timers: [] });
        const now = this.#d.now();
        const lines = running.map(
          (t) =>
            `${t.label} (id ${t.id}): ${spokenDuration(t.dueAt - now)} left, ends at ${this.#clockTime(t.dueAt)}`,
        );
        return ok(lines.join('\n'), { timers: running });
      }
      case 'cancel_timer':
        return this.#cancelTimer(args);
      case 'describe_camera': {
        const question = stringArg(args, 'question') ?? DEFAULT_QUESTION;
        const answer = await this.#d.camera!.describe(question, ctx.signal);
        return ok(answer.trim() || 'The camera model gave no answer.');
      }
      case 'announce': {
        const text = stringArg(args, 'text');
        if (!text) return refuse('announce needs the text to say');
        if (text.length > MAX_ANNOUNCE_CHARS)
          return refuse(`announce takes at most ${MAX_ANNOUNCE_CHARS} characters, not ${text.length}`);
        if (!this.#d.speaker!.say(text)) return refuse('the board has no speaker session running');
        return ok('Announced on the board speaker.');
      }
    }
  }

  #setTimer(args: Record<string, unknown>, ctx: ToolCallContext): ToolOutcome {
    const parts = (['hours', 'minutes', 'seconds'] as const).map((k) => numberArg(args, k));
    const bad = parts.find((p): p is string => typeof p === 'string');
    if (bad) return refuse(bad);
    const [h, m, s] = parts as number[];
    const durationMs = ((h ?? 0) * 3600 + (m ?? 0) * 60 + (s ?? 0)) * 1000;
    if (durationMs <= 0) return refuse('set_timer needs a duration: hours, minutes or seconds');
    const label = stringArg(args, 'label');
    const timer = this.#d.timers!.set({
      durationMs,
      ...(label ? { label } : {}),
      setBy: ctx.remote ? 'remote' : 'local',
    });
    return ok(
      `Timer "${timer.label}" (id ${timer.id}) set for ${spokenDuration(timer.durationMs)}; it ends at ${this.#clockTime(timer.dueAt)}.`,
      { timer },
    );
  }

  #cancelTimer(args: Record<string, unknown>): ToolOutcome {
    const timers = this.#d.timers!;
    const running = timers.running();
    const id = stringArg(args, 'id');
    const label = stringArg(args, 'label')?.toLowerCase();
    let matches: Timer[];
    if (id) matches = running.filter((t) => t.id === id);
    else if (label) matches = running.filter((t) => t.label.toLowerCase() === label);
    else matches = running;
    if (matches.length === 0)
      return refuse(
        running.length === 0
          ? 'no timers are running'
          : `no running timer matches; running: ${running.map((t) => `${t.label} (id ${t.id})`).join(', ')}`,
      );
    if (matches.length > 1)
      return refuse(
        `${matches.length} timers match; name one by id: ${matches.map((t) => `${t.label} (id ${t.id})`).join(', ')}`,
      );
    const cancelled = timers.cancel(matches[0]!.id);
    if (!cancelled) return refuse('that timer has just ended');
    return ok(`Timer "${cancelled.label}" cancelled.`, { timer: cancelled });
  }
}
