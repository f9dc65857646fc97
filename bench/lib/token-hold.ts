// bench/conversation (3c): how long a decoded token waits before the agent has it, through an engine host with the
// host's batched hand-over (read-ahead 8, tokens held up to 10 ms to cross together) and with no hold, on the
// benchmark model (one thread), generations alternating. A token is held only while the next one is due within the
// hold, so the hold's cost per token stays under the hold whatever the decode step; under the rule before, a held
// token waited for the next one, a whole decode step (a board's 25-100 ms) for every other token, the one that
// ends the first sentence of a voice reply among them.
import { EngineHostClient } from '../../engine/index.js';
import { createMemoryLogger } from '../../lib/log.js';
import { check, fmt, summarize } from './stats.js';

const HOST_HOLD_MS = 10;

interface Sample {
  /** The decode step, and a token's wait from its decode to the agent (host JS, then the IPC), ms. */
  stepMs: number;
  waitMs: number;
  tokensPerMessage: number;
}

export async function tokenHold(config: string, rounds: number): Promise<void> {
  const host = await EngineHostClient.start({ name: 'conversation:hold', logger: createMemoryLogger() });
  try {
    await host.load(config, { thread_num: 1 });
    await host.complete('Warm up.', { maxNewTokens: 4 });
    const samples = { hold: [] as Sample[], none: [] as Sample[] };
    for (let r = 0; r < rounds; r++) {
      for (const mode of r % 2 === 0 ? (['hold', 'none'] as const) : (['none', 'hold'] as const)) {
        const g = host.generate('Tell me about the board and its sensors, please.', {
          maxNewTokens: 48,
          reusePrefix: false,
          ...(mode === 'none' ? { handoverHoldMs: 0 } : {}),
        });
        for await (const _ of g);
        await g.result;
        const d = g.delivery;
        samples[mode].push({
          stepMs: (d.lastTokenUs - d.firstTokenUs) / Math.max(1, d.tokens - 1) / 1000,
          waitMs: (d.handoffUsSum / Math.max(1, d.tokens) + d.ipcUsSum / Math.max(1, d.pieces)) / 1000,
          tokensPerMessage: d.pieces / Math.max(1, d.messages),
        });
      }
    }
    const med = (s: Sample[], f: (x: Sample) => number) => summarize(s.map(f)).median;
    const costs = samples.hold.map((h, i) => h.waitMs - samples.none[i]!.waitMs);
    const cost = summarize(costs).median;
    const step = med(samples.hold, (x) => x.stepMs);
    console.log(
      `\n(3c) a token's wait from its decode to the agent, engine host, benchmark model, one thread, ${rounds} rounds`,
    );
    for (const [mode, label] of [
      ['hold', `held up to ${HOST_HOLD_MS} ms (the host's default)`],
      ['none', 'no hold'],
    ] as const) {
      const s = samples[mode];
      console.log(
        `    ${label.padEnd(38)} ${fmt(
          med(s, (x) => x.waitMs),
          2,
        )} ms a token, ${fmt(
          med(s, (x) => x.tokensPerMessage),
          1,
        )} tokens a message, decode step ${fmt(
          med(s, (x) => x.stepMs),
          1,
        )} ms`,
      );
    }
    console.log(
      `${check(`the hold's cost per token (paired; decode step ${fmt(step, 1)} ms)`, cost, 'ms', `≤ ${HOST_HOLD_MS}`, cost <= HOST_HOLD_MS)} ${fmt(cost, 2)} ms, ${fmt(cost / step, 2)} steps`,
    );
  } finally {
    await host.close();
  }
}
