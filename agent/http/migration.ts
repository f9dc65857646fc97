import type { Migration } from '../../lib/sqlite/migration.js';

// The HTTP server's schema (version 2, applied on devices from agent/store/migrations/002; never edited).
// Browser login sessions, kept server-side so logout and token rotation revoke them, and so an agent restart
// (an update, a crash) does not log the dashboard out. Only a hash of the session id is stored.
export const httpSessionsMigration: Migration = {
  version: 2,
  name: 'http: login sessions',
  up: `
    CREATE TABLE http_sessions (
      id_hash TEXT PRIMARY KEY,
      created_at INTEGER NOT NULL,
      expires_at INTEGER NOT NULL,
      client TEXT NOT NULL
    ) STRICT;
    CREATE INDEX http_sessions_expiry ON http_sessions (expires_at);
  `,
};
