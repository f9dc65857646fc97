import { errorMessage } from '../../lib/errors.js';
import { checkListing, describeExport, type ExportDescription, requireMnnExport } from './export-check.js';
import type { HubClient, HubSearchHit } from './types.js';

// Search hits made useful: each repository's file list and MNN export config, read without fetching weights,
// so `search` can show size, task and quantisation and `recommend` can estimate memory.

export interface DescribedRepo {
  hit: HubSearchHit;
  commit?: string;
  totalBytes?: number;
  export?: ExportDescription;
  /** Why this repository cannot be pulled as an MNN export (or could not be read). */
  problem?: string;
}

async function describeOne(
  client: HubClient,
  hit: HubSearchHit,
  signal?: AbortSignal,
): Promise<DescribedRepo> {
  try {
    const snapshot = await client.snapshot(hit.ref, signal);
    const { files } = checkListing(snapshot);
    requireMnnExport(snapshot, files);
    const has = (p: string) => files.some((f) => f.path === p);
    const [config, llmConfig] = await Promise.all([
      has('config.json') ? client.readSmallFile(snapshot, 'config.json', signal) : undefined,
      has('llm_config.json') ? client.readSmallFile(snapshot, 'llm_config.json', signal) : undefined,
    ]);
    return {
      hit,
      commit: snapshot.commit,
      totalBytes: files.reduce((a, f) => a + f.size, 0),
      export: describeExport(hit.repo, files, config, llmConfig),
    };
  } catch (err) {
    if (signal?.aborted) throw err;
    return { hit, problem: errorMessage(err) };
  }
}

/** Reads up to `concurrency` repositories at a time, keeping the hits' order. */
export async function describeRepos(
  client: HubClient,
  hits: readonly HubSearchHit[],
  options: { concurrency?: number; signal?: AbortSignal } = {},
): Promise<DescribedRepo[]> {
  const out: DescribedRepo[] = new Array(hits.length);
  let next = 0;
  const worker = async () => {
    while (next < hits.length) {
      const i = next++;
      out[i] = await describeOne(client, hits[i]!, options.signal);
    }
  };
  await Promise.all(Array.from({ length: Math.min(options.concurrency ?? 4, hits.length) }, worker));
  return out;
}
