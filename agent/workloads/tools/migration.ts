import type { Migration } from '../../../lib/sqlite/migration.js';

// The assistant's timers, one row each, so a timer set by voice survives an agent restart: due times are wall
// clock (epoch ms), a timer that came due while the agent was down fires at the next start, late. Ended timers
// (fired, cancelled) stay a while as the dashboard's history and are swept by count and age.
export const assistantTimersMigration: Migration = {
  version: 55,
  name: 'workloads: assistant timers',
  up: `
    CREATE TABLE assistant_timers (
      id TEXT PRIMARY KEY,
      label TEXT NOT NULL,
      duration_ms INTEGER NOT NULL,
      created_at INTEGER NOT NULL,
      due_at INTEGER NOT NULL,
      state TEXT NOT NULL CHECK (state IN ('running', 'fired', 'cancelled')),
      ended_at INTEGER,
      set_by TEXT NOT NULL
    ) STRICT;
    CREATE INDEX assistant_timers_state ON assistant_timers (state, due_at);
  `,
};
