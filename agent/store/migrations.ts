import type { Migration } from '../../lib/sqlite/migration.js';
import { modelsMigration } from '../../models/store/migration.js';
import { otaMigrations } from '../../ota/migrations.js';
import { httpSessionsMigration } from '../http/migration.js';
import { runtimeMigrations } from '../runtime/migrations.js';
import { telemetryMigrations } from '../telemetry/migrations.js';
import { assistantTimersMigration } from '../workloads/tools/migration.js';
import {
  voiceTurnPartsMigration,
  voiceTurnsMigration,
  voiceTurnToolCallsMigration,
} from '../workloads/voice/migration.js';
import { coreMigration } from './core-migration.js';

// Every feature's schema changes, listed once in the order devices applied them; each feature owns its
// migrations beside its code (the store's own kv table in core-migration.ts). Append; never edit an applied one.
export const allMigrations: readonly Migration[] = [
  coreMigration,
  httpSessionsMigration,
  modelsMigration,
  ...runtimeMigrations,
  ...telemetryMigrations,
  ...otaMigrations,
  voiceTurnsMigration,
  voiceTurnPartsMigration,
  assistantTimersMigration,
  voiceTurnToolCallsMigration,
];
