// The margin rule (another build may part from the x86 recording only at a small top-1/top-2 gap) and the
// llm_demo output parser the arm64 tier records its references with.
import test from 'ava';
import { parseLlmDemoOutput } from '../helpers/llm-demo.js';
import { compareWithMargins, SMALL_LOGIT_GAP } from '../helpers/margin-rule.js';

const recorded = {
  outputTokenIds: [10, 11, 12, 13, 14, 15],
  top1Top2LogitMargins: [1.2, 0.4, 0.03, 0.9, 0.2, 0.01],
  stoppedByStopToken: false,
};

test('identical tokens are identical; parting at or after the first small gap is allowed', (t) => {
  const same = compareWithMargins(recorded, [10, 11, 12, 13, 14, 15]);
  t.true(same.identical && same.ok);
  t.is(same.summary, 'identical (6/6 tokens)');
  // Parting at step 2, whose recorded gap (0.03) is small: another rounding may pick the runner-up there.
  const parted = compareWithMargins(recorded, [10, 11, 99, 98, 97, 96]);
  t.true(parted.ok, parted.summary);
  t.is(parted.agreed, 2);
  t.is(parted.firstSmallGap, 2);
  t.regex(parted.summary, /^2\/6 tokens agree, parted at step 2 \(recorded gap there 0\.0300/);
});

test('parting before the first small gap, or a different count without a stop token, fails', (t) => {
  const early = compareWithMargins(recorded, [10, 99, 12, 13, 14, 15]);
  t.false(early.ok);
  t.regex(early.summary, /parted before the first small gap$/);
  const short = compareWithMargins(recorded, [10, 11, 99]);
  t.false(short.ok);
  t.regex(short.summary, /token count differs$/);
  // After parting, a path may end on a stop token (<|im_end|> 258) before the recording's length.
  t.true(compareWithMargins(recorded, [10, 11, 99, 258]).ok);
  t.is(SMALL_LOGIT_GAP, 0.05);
});

test('llm_demo output: the text between the prompt-file line and #####, counts and the CPU report', (t) => {
  const stdout = [
    'config path is /m/config.json',
    'The device supports: i8sdot:1, fp16:1, i8mm: 1, sve2: 1, sme2: 0',
    'prompt file is /tmp/p.txt',
    'Warning: 2 channels found. Only the first channel will be used.',
    ' hello\nworld\n',
    '#################################',
    'prompt tokens num = 9',
    'decode tokens num = 12',
    '##################################',
  ].join('\n');
  const run = parseLlmDemoOutput(stdout);
  t.is(run.text, ' hello\nworld\n');
  t.is(run.promptTokens, 9);
  t.is(run.decodeTokens, 12);
  t.is(run.deviceSupports, 'The device supports: i8sdot:1, fp16:1, i8mm: 1, sve2: 1, sme2: 0');
  t.deepEqual(run.before, ['Warning: 2 channels found. Only the first channel will be used.']);
  t.throws(() => parseLlmDemoOutput('config path is x\n'), { message: /no "prompt file is" line/ });
});
