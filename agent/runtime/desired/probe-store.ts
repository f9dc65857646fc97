import type { Db } from '../../../lib/sqlite/database.js';
import type { ProbeResult } from '../../plan/types.js';

interface Row {
  model_id: string;
  version: string;
  variant_id: string;
  config: string;
  engine_version: string;
  board_id: string;
  ok: number;
  load_ms: number;
  prefill_tok_s: number;
  decode_tok_s: number;
  peak_rss_bytes: number;
  measured_at: number;
  error: string | null;
}

function fromRow(r: Row): ProbeResult {
  const p: ProbeResult = {
    modelId: r.model_id,
    version: r.version,
    variantId: r.variant_id,
    config: r.config,
    engineVersion: r.engine_version,
    boardId: r.board_id,
    ok: r.ok === 1,
    loadMs: r.load_ms,
    prefillTokPerSec: r.prefill_tok_s,
    decodeTokPerSec: r.decode_tok_s,
    peakRssBytes: r.peak_rss_bytes,
    measuredAt: r.measured_at,
  };
  if (r.error !== null) p.error = r.error;
  return p;
}

/** Measured (variant, backend) results; the planner reads them, `bench models` and the background prober write. */
export class ProbeStore {
  readonly #db: Db;
  constructor(db: Db) {
    this.#db = db;
  }

  put(p: ProbeResult): void {
    this.#db
      .prepare(
        `INSERT INTO runtime_probes (model_id, version, variant_id, config, engine_version, board_id, ok, load_ms,
           prefill_tok_s, decode_tok_s, peak_rss_bytes, measured_at, error)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (model_id, version, variant_id, config, engine_version, board_id) DO UPDATE SET
           ok = excluded.ok, load_ms = excluded.load_ms, prefill_tok_s = excluded.prefill_tok_s,
           decode_tok_s = excluded.decode_tok_s, peak_rss_bytes = excluded.peak_rss_bytes,
           measured_at = excluded.measured_at, error = excluded.error`,
      )
      .run(
        p.modelId,
        p.version,
        p.variantId,
        p.config,
        p.engineVersion,
        p.boardId,
        p.ok ? 1 : 0,
        p.loadMs,
        p.prefillTokPerSec,
        p.decodeTokPerSec,
        Math.round(p.peakRssBytes),
        p.measuredAt,
        p.error ?? null,
      );
  }

  /** Results for this board and engine: the only ones the planner may use. */
  forBoard(boardId: string, engineVersion: string): ProbeResult[] {
    const rows = this.#db
      .prepare(
        `SELECT * FROM runtime_probes WHERE board_id = ? AND engine_version = ?
         ORDER BY model_id, version, variant_id, config`,
      )
      .all(boardId, engineVersion) as Row[];
    return rows.map(fromRow);
  }

  all(): ProbeResult[] {
    return (this.#db.prepare('SELECT * FROM runtime_probes ORDER BY measured_at').all() as Row[]).map(
      fromRow,
    );
  }
}
