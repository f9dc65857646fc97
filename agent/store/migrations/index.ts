import { modelsMigration } from '../../../models/store/migration.js';
import { runtimeMigrations } from '../../runtime/migrations.js';
import { voiceTurnsMigration } from '../../workloads/voice/migration.js';
import type { Migration } from '../sqlite/migration.js';
import { coreMigration } from './001-core.js';
import { httpSessionsMigration } from './002-http-sessions.js';
import { telemetryOutboxMigration } from './030-telemetry-outbox.js';
import { telemetryHistoryMigration } from './031-telemetry-history.js';
import { otaTrustMigration } from './040-ota-trust.js';
import { otaJobsMigration } from './041-ota-jobs.js';
import { otaRolloutsMigration } from './042-ota-rollouts.js';
import { otaRootMigration } from './043-ota-root.js';

// Every module's schema changes, listed once. Append; never edit an applied migration.
export const allMigrations: readonly Migration[] = [
  coreMigration,
  httpSessionsMigration,
  modelsMigration,
  ...runtimeMigrations,
  telemetryOutboxMigration,
  telemetryHistoryMigration,
  otaTrustMigration,
  otaJobsMigration,
  otaRolloutsMigration,
  otaRootMigration,
  voiceTurnsMigration,
];
