// bench/conversation (3)'s measurements and their report (lib-voice-turn.ts runs the rounds): one side's parts of
// a turn, and the table of the paired rounds with the overhead's median, its confidence interval and the check.
import type { TurnMetrics } from '../../agent/workloads/voice/turn-store.js';
import { bar, check, describe, fmt, type Summary, summarize } from './stats.js';

/** One side's parts, ms: the stages' own times, the hand-overs (pipeline only) and end of speech → first audio. */
export interface Side {
  vad: number;
  asr: number;
  llm: number;
  tts: number;
  /** Alone: TTS to its first chunk with espeak-ng started only when the sentence is due (no prepare()). */
  ttsCold?: number;
  total: number;
  transcript: string;
  sentence: string;
  /** The ASR's and the LLM's KV reuse outcomes. */
  reuse: string;
  hand?: Record<Handover, number>;
  metrics?: TurnMetrics;
}

export const HANDOVERS = {
  vadToTurn: 'VAD decision → turn starts',
  turnToAsr: 'turn start → ASR called',
  asrToLlm: 'ASR done → LLM called',
  sentenceToTts: 'sentence cut → TTS called',
  chunkToAudio: 'TTS first chunk → audio event',
} as const;
export type Handover = keyof typeof HANDOVERS;

/** A distribution-free 95 % confidence interval of the median: the order statistics the binomial puts it between
 *  ([x(j+1), x(n-j)] for the largest j with P(Binomial(n, 1/2) ≤ j) ≤ 2.5 %; n = 21: the 6th and 16th of 21). */
function medianInterval(samples: number[]): [number, number] {
  const s = [...samples].sort((a, b) => a - b);
  const n = s.length;
  let cdf = 0;
  let j = -1;
  for (let i = 0; i < n; i++) {
    cdf += choose(n, i) / 2 ** n;
    if (cdf > 0.025) break;
    j = i;
  }
  return j < 0 ? [Number.NaN, Number.NaN] : [s[j]!, s[n - 1 - j]!];
}

function choose(n: number, k: number): number {
  let r = 1;
  for (let i = 1; i <= k; i++) r = (r * (n - k + i)) / i;
  return r;
}

const spread = (s: Summary, digits = 1) =>
  `${fmt(s.median, digits).padStart(7)}  ${fmt(s.p10, digits).padStart(7)}–${fmt(s.p90, digits).padEnd(7)}`;

export function report(pairs: Array<{ pipe: Side; alone: Side; pipeFirst: boolean }>): void {
  const col = (f: (p: { pipe: Side; alone: Side }) => number) => summarize(pairs.map(f));
  console.log(
    `\n(3) voice turn, end of speech → first audio (Silero VAD, tiny-omni-audio ASR, tiny-llm, espeak-ng), ${pairs.length} paired rounds, order alternating`,
  );
  console.log('    ms, median and p10–p90   in pipeline          alone            pipeline − alone (paired)');
  const parts: Array<[string, keyof Side]> = [
    ['VAD, the deciding frame', 'vad'],
    ['ASR', 'asr'],
    ['LLM to first sentence', 'llm'],
    ['TTS to first chunk', 'tts'],
    ['end of speech → audio', 'total'],
  ];
  for (const [label, k] of parts) {
    const p = col((x) => x.pipe[k] as number);
    const a = col((x) => x.alone[k] as number);
    const d = col((x) => (x.pipe[k] as number) - (x.alone[k] as number));
    console.log(`    ${label.padEnd(24)} ${spread(p)}  ${spread(a)}  ${spread(d)}`);
  }
  const cold = col((x) => x.alone.ttsCold ?? Number.NaN);
  console.log(
    `    TTS to first chunk alone, espeak-ng started only when the sentence is due (no prepare): ${spread(cold)}`,
  );
  console.log('    hand-overs in the pipeline (ms, median, p90, max):');
  for (const [k, label] of Object.entries(HANDOVERS) as Array<[Handover, string]>) {
    const h = col((x) => x.pipe.hand![k]);
    console.log(`      ${label.padEnd(36)} ${fmt(h.median, 2)}  ${fmt(h.p90, 2)}  ${fmt(h.max, 2)}`);
  }
  const m = (k: keyof TurnMetrics) =>
    describe(
      col((x) => {
        const v = x.pipe.metrics?.[k];
        return typeof v === 'number' ? v : Number.NaN;
      }),
      'ms',
      1,
    );
  console.log("    the session's own per-turn record (what the Voice page and telemetry show, whole ms):");
  console.log(`      VAD end decision (audio): ${m('vadEndMs')}`);
  console.log(`      ASR ${m('asrMs')}; LLM TTFT ${m('llmTtftMs')}; first sentence ${m('sentenceMs')}`);
  console.log(
    `      first TTS chunk ${m('ttsFirstMs')}; hand-overs ${m('handoverMs')}; first audio ${m('ttfaMs')}`,
  );
  const same = pairs.filter(
    (x) => x.pipe.transcript === x.alone.transcript && x.pipe.sentence === x.alone.sentence,
  ).length;
  console.log(
    `    same transcript and first sentence on both sides: ${same}/${pairs.length} rounds (sentence: ${JSON.stringify(pairs[0]?.pipe.sentence)})`,
  );
  const tally = (side: 'pipe' | 'alone') => {
    const n = new Map<string, number>();
    for (const x of pairs) n.set(x[side].reuse, (n.get(x[side].reuse) ?? 0) + 1);
    return [...n].map(([k, v]) => `${k} ×${v}`).join(', ');
  };
  console.log(`    KV reuse, ASR/LLM: pipeline ${tally('pipe')}; alone ${tally('alone')}`);
  const diffs = pairs.map((x) => x.pipe.total - x.alone.total);
  const overhead = summarize(diffs);
  const [lo, hi] = medianInterval(diffs);
  const stageDiffs = (['vad', 'asr', 'llm', 'tts'] as const).reduce(
    (sum, k) => sum + col((x) => x.pipe[k] - x.alone[k]).median,
    0,
  );
  const handovers = (Object.keys(HANDOVERS) as Handover[]).reduce(
    (sum, k) => sum + col((x) => x.pipe.hand![k]).median,
    0,
  );
  console.log(
    `    overhead, median of the paired rounds: ${fmt(overhead.median, 1)} ms, 95 % interval ${fmt(lo, 1)}…${fmt(hi, 1)} ms (${hi <= 20 ? 'the target is shown' : 'too wide to show the target'})`,
  );
  console.log(
    `    overhead by parts: the stages' paired medians ${fmt(stageDiffs, 1)} ms + the hand-overs' medians ${fmt(handovers, 2)} ms = ${fmt(stageDiffs + handovers, 1)} ms`,
  );
  const byOrder = (first: boolean) =>
    fmt(
      summarize(pairs.filter((x) => x.pipeFirst === first).map((x) => x.pipe.total - x.alone.total)).median,
      1,
    );
  console.log(`    overhead by order: pipeline first ${byOrder(true)} ms, stages first ${byOrder(false)} ms`);
  const total = col((x) => x.pipe.total);
  const sum = col((x) => x.alone.total);
  const scale = Math.max(total.median, sum.median);
  console.log(bar('pipeline', total.median, scale, `${fmt(total.median, 1)} ms`));
  console.log(bar('stages alone', sum.median, scale, `${fmt(sum.median, 1)} ms`));
  console.log(
    `${check('voice turn overhead (pipeline − stages alone, paired rounds)', overhead.median, 'ms', '≤ 20', overhead.median <= 20)} ${describe(overhead, 'ms', 1)}, p10–p90 ${fmt(overhead.p10, 1)}–${fmt(overhead.p90, 1)} ms`,
  );
}
