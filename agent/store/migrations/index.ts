import type { Migration } from '../migration.js';
import { coreMigration } from './001-core.js';

// Every module's schema changes, listed once. Append; never edit an applied migration.
export const allMigrations: readonly Migration[] = [coreMigration];
