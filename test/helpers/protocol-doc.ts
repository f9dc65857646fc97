import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { SLOT_NAMES } from '../../agent/plan/types.js';
import { repoRoot } from './paths.js';

// The contract documents as tests read them: docs/PROTOCOL.md's tables (what integrators build against) and
// docs/METRICS.md's (what scrapers do).

export const protocolDoc = readFileSync(join(repoRoot, 'docs', 'PROTOCOL.md'), 'utf8');
export const metricsDoc = readFileSync(join(repoRoot, 'docs', 'METRICS.md'), 'utf8');

/** The rows of the markdown table whose header starts with `firstHeader` (cells trimmed, `\|` kept as `|`). */
export function table(doc: string, firstHeader: string): string[][] {
  const lines = doc.split('\n');
  const start = lines.findIndex((l) => l.startsWith(`| ${firstHeader} |`));
  if (start < 0) throw new Error(`no table with header "${firstHeader}"`);
  const rows: string[][] = [];
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith('|')) break;
    rows.push(
      line
        .slice(1, -1)
        .split(/(?<!\\)\|/)
        .map((c) => c.trim().replace(/\\\|/g, '|')),
    );
  }
  return rows;
}

/** Every `code span` in a cell. */
export function codes(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
}

/** A documented telemetry name (`cpu.core<N>.load_pct`, `slot.<slot>.ttft_ms`) as a pattern for real names. */
export function metricPattern(name: string): RegExp {
  const slots = SLOT_NAMES.map((s) => s.replace(/\./g, '\\.')).join('|');
  const body = name
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .replace('<N>', '\\d+')
    .replace('<slot>', `(?:${slots})`)
    .replace(/<[a-z]+>/g, '[A-Za-z0-9_-]+');
  return new RegExp(`^${body}$`);
}

/** docs/PROTOCOL.md's telemetry metric names, as patterns. */
export function documentedTelemetry(): Array<{ name: string; re: RegExp }> {
  return table(protocolDoc, 'metric')
    .flatMap(([cell]) => codes(cell!))
    .map((name) => ({ name, re: metricPattern(name) }));
}

/** docs/METRICS.md's families: name → type. */
export function documentedFamilies(): Map<string, string> {
  return new Map(
    [...metricsDoc.matchAll(/^\| `(mnn_edge_[a-z_]+)` \| (counter|gauge|histogram) \|/gm)].map((m) => [
      m[1]!,
      m[2]!,
    ]),
  );
}

/** A family as parse-prometheus-text-format (a real exposition-format parser from the npm registry) reads it. */
export interface ParsedFamily {
  name: string;
  type: string;
  help: string;
  metrics: Array<{
    labels?: Record<string, string>;
    value?: string;
    buckets?: Record<string, string>;
    count?: string;
    sum?: string;
  }>;
}

/** /metrics' text, parsed. */
export const parseExposition = createRequire(import.meta.url)('parse-prometheus-text-format') as (
  text: string,
) => ParsedFamily[];
