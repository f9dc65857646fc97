// Where a token's time goes in bench/engine, hop by hop (hops, not layers: "layer" is the architecture's word):
// MNN's decode step, the addon's hand-over to JS, an engine host's hand-over to the agent, from the delivery
// figures a generation reports. Printed for (a), the addon in-process, and (b), an engine host.
import type { GenerationDelivery, HostDelivery } from '../../engine/index.js';
import { fmt, summarize } from './stats.js';

export interface Hops {
  /** Native time per decoded token on the decode thread (MNN step + our hand-over). */
  nativeStepUs: number;
  /** MNN's own decode time per token (forward + detokenize), and its sampling time per token. */
  mnnDecodeUs: number;
  mnnSampleUs: number;
  /** Mean wait of a token from its decode to the JS callback that receives it. */
  addonToJsUs: number;
  /** Mean wait of a piece from the host's send to the agent's receipt. */
  hostToAgentUs: number;
  tokensPerBatch: number;
  /** generate() to the first token on the decode thread, in the process that runs the model. */
  nativeTtftMs: number;
  /** Per token, the time the decode thread waited because the consumer had not taken its read-ahead yet. */
  creditWaitUs: number;
}

export function hopsOf(
  d: GenerationDelivery,
  stats: { decodeUs: number; sampleUs: number; generatedTokens: number },
  ipc?: HostDelivery,
): Hops {
  return {
    nativeStepUs: (d.lastTokenUs - d.firstTokenUs) / Math.max(1, d.tokens - 1),
    mnnDecodeUs: stats.decodeUs / Math.max(1, stats.generatedTokens),
    mnnSampleUs: stats.sampleUs / Math.max(1, stats.generatedTokens),
    addonToJsUs: d.handoffUsSum / Math.max(1, d.tokens),
    hostToAgentUs: ipc ? ipc.ipcUsSum / Math.max(1, ipc.pieces) : 0,
    tokensPerBatch: d.tokens / Math.max(1, ipc ? ipc.messages : d.batches),
    nativeTtftMs: (d.firstTokenUs - d.startUs) / 1000,
    creditWaitUs: d.creditWaitUs / Math.max(1, d.tokens),
  };
}

function median<T>(items: T[], f: (x: T) => number): number {
  return summarize(items.map(f)).median;
}

export function printHopCosts(hops: Record<'a' | 'b', Hops[]>, labels: Record<'a' | 'b', string>): void {
  console.log('\ncost per token by hop (medians over rounds):');
  for (const k of ['a', 'b'] as const) {
    const l = hops[k];
    console.log(
      `  ${labels[k].padEnd(24)} native step ${fmt(
        median(l, (x) => x.nativeStepUs),
        0,
      )} µs ` +
        `(MNN decode ${fmt(
          median(l, (x) => x.mnnDecodeUs),
          0,
        )} µs + sample ${fmt(
          median(l, (x) => x.mnnSampleUs),
          1,
        )} µs)` +
        ` | ${k === 'b' ? "addon→JS incl. the host's 10 ms hold" : 'addon→JS'} ${fmt(
          median(l, (x) => x.addonToJsUs),
          1,
        )} µs` +
        (k === 'b'
          ? ` | host→agent ${fmt(
              median(l, (x) => x.hostToAgentUs),
              1,
            )} µs`
          : '') +
        ` | ${fmt(
          median(l, (x) => x.tokensPerBatch),
          2,
        )} tokens/${k === 'b' ? 'message' : 'batch'}` +
        ` | native TTFT ${fmt(
          median(l, (x) => x.nativeTtftMs),
          2,
        )} ms` +
        ` | decode thread waited for JS ${fmt(
          median(l, (x) => x.creditWaitUs),
          1,
        )} µs/token`,
    );
  }
  console.log(
    '  (hand-over latencies overlap the next decode step: they add to TTFT once, not to the decode rate)',
  );
}
