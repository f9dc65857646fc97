import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** The shared fixtures live beside the checkout (../shared); MNN_EDGE_SHARED overrides. */
export const sharedDir = process.env['MNN_EDGE_SHARED'] ?? resolve(repoRoot, '..', 'shared');
export const fixturesDir = join(sharedDir, 'fixtures');
export const socFixturesDir = join(fixturesDir, 'soc');
export const modelFixturesDir = join(fixturesDir, 'models');
export const mediaFixturesDir = join(fixturesDir, 'media');

if (!existsSync(fixturesDir)) {
  throw new Error(
    `Shared fixtures not found at ${fixturesDir}; set MNN_EDGE_SHARED to the shared/ directory`,
  );
}
