import type { Migration } from '../../../lib/sqlite/migration.js';
import { modelsMigration } from '../../../models/store/migration.js';
import { otaMigrations } from '../../../ota/migrations.js';
import { runtimeMigrations } from '../../runtime/migrations.js';
import { voiceTurnPartsMigration, voiceTurnsMigration } from '../../workloads/voice/migration.js';
import { coreMigration } from './001-core.js';
import { httpSessionsMigration } from './002-http-sessions.js';
import { telemetryOutboxMigration } from './030-telemetry-outbox.js';
import { telemetryHistoryMigration } from './031-telemetry-history.js';

// Every module's schema changes, listed once. Append; never edit an applied migration.
export const allMigrations: readonly Migration[] = [
  coreMigration,
  httpSessionsMigration,
  modelsMigration,
  ...runtimeMigrations,
  telemetryOutboxMigration,
  telemetryHistoryMigration,
  ...otaMigrations,
  voiceTurnsMigration,
  voiceTurnPartsMigration,
];
