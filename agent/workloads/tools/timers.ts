// The assistant's timers: set, listed and cancelled by the built-in tools and the dashboard, kept in the agent's
// SQLite store so they survive a restart, and fired when due. Firing is the owner's business (onFire: the board's
// speaker says it, the fleet gets an event); this file keeps the rows and the schedule. Due times are wall clock:
// a timer is "ten minutes from when it was set" for the person who set it, across a reboot too.
import { randomUUID } from 'node:crypto';
import type { Db } from '../../../lib/sqlite/database.js';
import { WorkloadError } from '../shared/errors.js';

export type TimerState = 'running' | 'fired' | 'cancelled';

export interface Timer {
  id: string;
  label: string;
  durationMs: number;
  createdAt: number;
  dueAt: number;
  state: TimerState;
  endedAt?: number;
  /** Who set it: `voice`, `wyoming`, `chat`, `dashboard`, `remote`. */
  setBy: string;
}

/** What happened to a timer, newest first in the dashboard's list. */
export interface TimerEvent {
  type: 'set' | 'fired' | 'cancelled';
  id: string;
  label: string;
  at: number;
  /** A timer that came due while the agent was not running fires late, at the next start. */
  late?: boolean;
}

export interface TimerServiceOptions {
  now: () => number;
  maxTimers: () => number;
  /** Called once per timer when it comes due (late: it was due before the agent started). */
  onFire?: (timer: Timer, late: boolean) => void;
  /** Ended timers kept for the history. */
  keepEnded?: number;
  /** Longest a timer may run. */
  maxDurationMs?: number;
}

type Row = {
  id: string;
  label: string;
  duration_ms: number;
  created_at: number;
  due_at: number;
  state: TimerState;
  ended_at: number | null;
  set_by: string;
};

function timerOf(r: Row): Timer {
  return {
    id: r.id,
    label: r.label,
    durationMs: r.duration_ms,
    createdAt: r.created_at,
    dueAt: r.due_at,
    state: r.state,
    ...(r.ended_at !== null ? { endedAt: r.ended_at } : {}),
    setBy: r.set_by,
  };
}

/** setTimeout's longest delay; longer timers re-arm when it passes. */
const MAX_DELAY = 2_147_483_647;
export const MAX_LABEL_CHARS = 80;
const DAY_MS = 86_400_000;

export class TimerService {
  readonly #db: Db;
  readonly #o: Required<Omit<TimerServiceOptions, 'onFire'>> & Pick<TimerServiceOptions, 'onFire'>;
  readonly #handles = new Map<string, NodeJS.Timeout>();
  #started = false;

  constructor(db: Db, options: TimerServiceOptions) {
    this.#db = db;
    this.#o = { keepEnded: 100, maxDurationMs: 7 * DAY_MS, ...options };
  }

  /** Arms every running timer; those already due fire now, marked late. */
  start(): void {
    if (this.#started) return;
    this.#started = true;
    for (const t of this.running()) this.#arm(t, true);
  }

  stop(): void {
    this.#started = false;
    for (const h of this.#handles.values()) clearTimeout(h);
    this.#handles.clear();
  }

  set(input: { durationMs: number; label?: string; setBy: string }): Timer {
    const { durationMs } = input;
    if (!Number.isFinite(durationMs) || durationMs < 1000)
      throw new WorkloadError('ESTATE', `A timer must run at least 1 second, not ${durationMs} ms`);
    if (durationMs > this.#o.maxDurationMs)
      throw new WorkloadError(
        'ESTATE',
        `A timer may run at most ${this.#o.maxDurationMs / DAY_MS} days, not ${Math.round(durationMs / 1000)} s`,
      );
    const label = (input.label ?? '').trim().slice(0, MAX_LABEL_CHARS) || 'timer';
    const running = this.running().length;
    if (running >= this.#o.maxTimers())
      throw new WorkloadError(
        'EBUSY',
        `${running} timers are running, the most there may be (voice.tools.maxTimers): cancel one first`,
      );
    const now = this.#o.now();
    const timer: Timer = {
      id: randomUUID().slice(0, 8),
      label,
      durationMs: Math.round(durationMs),
      createdAt: now,
      dueAt: now + Math.round(durationMs),
      state: 'running',
      setBy: input.setBy,
    };
    this.#db
      .prepare(
        `INSERT INTO assistant_timers (id, label, duration_ms, created_at, due_at, state, set_by)
         VALUES (?, ?, ?, ?, ?, 'running', ?)`,
      )
      .run(timer.id, timer.label, timer.durationMs, timer.createdAt, timer.dueAt, timer.setBy);
    this.#prune();
    if (this.#started) this.#arm(timer, false);
    return timer;
  }

  /** Cancels a running timer; undefined when there is none with that id. */
  cancel(id: string): Timer | undefined {
    const now = this.#o.now();
    const changed = this.#db
      .prepare(
        `UPDATE assistant_timers SET state = 'cancelled', ended_at = ? WHERE id = ? AND state = 'running'`,
      )
      .run(now, id).changes;
    if (changed === 0) return undefined;
    clearTimeout(this.#handles.get(id));
    this.#handles.delete(id);
    return this.get(id);
  }

  get(id: string): Timer | undefined {
    const row = this.#db.prepare('SELECT * FROM assistant_timers WHERE id = ?').get(id) as Row | undefined;
    return row ? timerOf(row) : undefined;
  }

  running(): Timer[] {
    return (
      this.#db
        .prepare(`SELECT * FROM assistant_timers WHERE state = 'running' ORDER BY due_at`)
        .all() as Row[]
    ).map(timerOf);
  }

  /** Running timers and the latest ended ones, newest first after the running. */
  list(limit = 50): Timer[] {
    const ended = (
      this.#db
        .prepare(`SELECT * FROM assistant_timers WHERE state != 'running' ORDER BY ended_at DESC, id LIMIT ?`)
        .all(limit) as Row[]
    ).map(timerOf);
    return [...this.running(), ...ended];
  }

  /** Sets, firings and cancels, newest first, from what the rows hold. */
  events(limit = 50): TimerEvent[] {
    const events = this.list(limit).flatMap((t): TimerEvent[] => [
      { type: 'set', id: t.id, label: t.label, at: t.createdAt },
      ...(t.state !== 'running' && t.endedAt !== undefined
        ? [
            {
              type: t.state,
              id: t.id,
              label: t.label,
              at: t.endedAt,
              ...(t.state === 'fired' && t.endedAt - t.dueAt > 60_000 ? { late: true } : {}),
            },
          ]
        : []),
    ]);
    return events.sort((a, b) => b.at - a.at).slice(0, limit);
  }

  #arm(timer: Timer, atStart: boolean): void {
    clearTimeout(this.#handles.get(timer.id));
    const wait = timer.dueAt - this.#o.now();
    if (wait <= 0) {
      this.#fire(timer.id, atStart);
      return;
    }
    const handle = setTimeout(
      () => {
        this.#handles.delete(timer.id);
        if (wait > MAX_DELAY) this.#arm(timer, false);
        else this.#fire(timer.id, false);
      },
      Math.min(wait, MAX_DELAY),
    );
    handle.unref();
    this.#handles.set(timer.id, handle);
  }

  #fire(id: string, late: boolean): void {
    const changed = this.#db
      .prepare(`UPDATE assistant_timers SET state = 'fired', ended_at = ? WHERE id = ? AND state = 'running'`)
      .run(this.#o.now(), id).changes;
    if (changed === 0) return; // cancelled meanwhile
    const timer = this.get(id);
    try {
      if (timer) this.#o.onFire?.(timer, late);
    } catch {
      // The owner's handler reports its own failures; the timer has fired and stays fired.
    }
  }

  /** Ended timers beyond the kept count, and any older than a week, go. */
  #prune(): void {
    this.#db
      .prepare(
        `DELETE FROM assistant_timers WHERE state != 'running' AND (ended_at < ? OR id NOT IN (
           SELECT id FROM assistant_timers WHERE state != 'running' ORDER BY ended_at DESC LIMIT ?))`,
      )
      .run(this.#o.now() - 7 * DAY_MS, this.#o.keepEnded);
  }
}
