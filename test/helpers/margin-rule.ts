// The one rule for comparing a greedy generation with the fixtures' x86 recording when the build differs (another
// ISA, fp16, other kernels). The recording gives, per step, the logit gap between the chosen token and the
// runner-up. Where that gap is small, a different rounding may pick the runner-up, and from there on the texts
// legitimately part. So: the tokens before the first small gap must be the recorded ones, and the run must
// produce as many tokens as the recording (or stop on a stop token after it has parted). docs/ENGINE.md states it
// for people; this file is the only implementation.

/** A gap under this (in logits) is "small": another build may choose the runner-up there. */
export const SMALL_LOGIT_GAP = 0.05;

export interface RecordedGeneration {
  outputTokenIds: readonly number[];
  top1Top2LogitMargins: readonly number[];
  stoppedByStopToken: boolean;
}

export interface MarginVerdict {
  /** Leading tokens identical to the recording. */
  agreed: number;
  /** Tokens the recording has. */
  total: number;
  /** Index of the first step whose gap is small (the recording's length when there is none). */
  firstSmallGap: number;
  identical: boolean;
  ok: boolean;
  /** One line for a test message or a report. */
  summary: string;
}

/** Token ids that end a generation in the fixtures' chat template (<|im_end|>, <|endoftext|>). */
const STOP_TOKENS = new Set([256, 258]);

export function compareWithMargins(recorded: RecordedGeneration, actual: readonly number[]): MarginVerdict {
  const want = recorded.outputTokenIds;
  const gaps = recorded.top1Top2LogitMargins;
  let firstSmallGap = gaps.findIndex((g) => g < SMALL_LOGIT_GAP);
  if (firstSmallGap < 0) firstSmallGap = want.length;
  let agreed = 0;
  while (agreed < want.length && agreed < actual.length && want[agreed] === actual[agreed]) agreed++;
  const identical = agreed === want.length && actual.length === want.length;
  const last = actual[actual.length - 1];
  const endedOnStop = last !== undefined && STOP_TOKENS.has(last);
  const countsOk = actual.length === want.length || (agreed < want.length && endedOnStop);
  const ok = identical || (agreed >= firstSmallGap && countsOk);
  let summary: string;
  if (identical) summary = `identical (${want.length}/${want.length} tokens)`;
  else {
    const gap = gaps[agreed];
    summary =
      `${agreed}/${want.length} tokens agree, parted at step ${agreed} ` +
      `(recorded gap there ${gap === undefined ? 'none' : gap.toFixed(4)}; first gap < ${SMALL_LOGIT_GAP} ` +
      `at step ${firstSmallGap}); ${actual.length} tokens generated` +
      (ok ? '' : countsOk ? ': parted before the first small gap' : ': token count differs');
  }
  return { agreed, total: want.length, firstSmallGap, identical, ok, summary };
}
