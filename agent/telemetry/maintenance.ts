import type { Db } from '../../lib/sqlite/database.js';

// VACUUM rewrites the whole database (flash wear, seconds of I/O), so it runs only when enough pages are free
// to be worth it, and only from the maintenance schedule, never on the telemetry path.

export interface VacuumPolicy {
  /** Fraction of free pages that triggers a VACUUM. */
  minFreeFraction: number;
  /** Below this many free pages a VACUUM is never worth it. */
  minFreePages: number;
}

export const defaultVacuumPolicy: VacuumPolicy = { minFreeFraction: 0.25, minFreePages: 256 };

export interface VacuumResult {
  vacuumed: boolean;
  freePages: number;
  pageCount: number;
}

export function vacuumIfWorthIt(db: Db, policy: VacuumPolicy = defaultVacuumPolicy): VacuumResult {
  const freePages = db.pragma('freelist_count', { simple: true }) as number;
  const pageCount = db.pragma('page_count', { simple: true }) as number;
  const worth = freePages >= policy.minFreePages && freePages >= pageCount * policy.minFreeFraction;
  if (worth) db.exec('VACUUM');
  return { vacuumed: worth, freePages, pageCount };
}
