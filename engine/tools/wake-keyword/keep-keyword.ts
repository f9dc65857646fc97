// Keeps a trained keyword head in the repository (models/keywords/<name>/, issue 45): the head's ONNX as the
// generator wrote it before MNNConvert (head.onnx) and keyword.json, the record that makes it reproducible and
// checkable, in the fields models/wake-shipped/keyword-source.ts reads: phrase, recipe, seed, version, the rule
// the generator chose, the sha256 of head.onnx, the command line that made it (`reproduce`), the real sources it
// was trained on (ids and sha256 from real-sources.sha256), the benchmark's figures, the licence of the weights. The feature models are not kept: they are converted at build or
// install time (convert.ts).
//
//   npx tsx engine/tools/wake-keyword/keep-keyword.ts PACKAGE_DIR models/keywords/NAME --command "make-keyword…"
//        [--figures FIGURES.json]
import { createHash } from 'node:crypto';
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DEV_SOURCES } from './dev-split.js';
import type { KeywordReport } from './make-keyword.js';
import { expectedDigests, REAL_SOURCES } from './real-sources.js';

export interface KeptKeyword {
  name: string;
  phrase: string;
  recipe: number;
  seed: number;
  /** The store's version of the assembled package (models/wake-shipped reads it). */
  version: string;
  rule: KeywordReport['rule'];
  /** sha256 of head.onnx (models/wake-shipped/keyword-source.ts checks the head against it). */
  sha256: string;
  head: { file: 'head.onnx'; input: string; output: string };
  /** The generator's command line that made the head. */
  reproduce: string;
  training: {
    synthetic: string;
    real: Array<{ id: string; sha256: string | undefined; files: string }>;
    sha256List: string;
    corpus: KeywordReport['training'];
  };
  generatorHeldOut: KeywordReport['heldOut'];
  /** Recipe 8: the development sources the rule was chosen on (not trained on), their hours and false accepts. */
  development?: KeywordReport['development'];
  /** Recipe 8: the hard negatives mined with an earlier head. */
  mined?: KeywordReport['mined'];
  figures?: unknown;
  licence: string;
}

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

/** The training split's real sources (what `--real-minutes`/`--real-positives` read), with their digests; with
 *  `heldOut` (recipe 8's development sources) those are named as the rule's, not training's. */
export function trainingSources(
  phrase: string,
  heldOut: readonly string[] = [],
): KeptKeyword['training']['real'] {
  const digests = expectedDigests();
  // A keyword source trains only the phrase it says, and only its training-split speakers (real-sources.ts).
  return REAL_SOURCES.filter(
    (s) => s.split === 'train' && (s.role !== 'keyword' || (s.kind === 'git' && s.phrase === phrase)),
  ).map((s) => ({
    id: s.id,
    sha256: digests.get(s.id),
    files: heldOut.includes(s.id)
      ? 'none trained: the development part, on which the rule was chosen (dev-split.ts)'
      : s.role === 'keyword'
        ? `training-split speakers only (not ${s.kind === 'git' ? (s.otherSplitSpeakers ?? []).join(', ') : ''})`
        : 'all (training split)',
  }));
}

export function keepKeyword(
  packageDir: string,
  outDir: string,
  command: string,
  figures?: unknown,
): KeptKeyword {
  const report = JSON.parse(readFileSync(join(packageDir, 'report.json'), 'utf8')) as KeywordReport;
  const onnx = readFileSync(join(packageDir, `${report.name}.onnx`));
  const usedReal = report.recipe >= 6;
  const kept: KeptKeyword = {
    name: report.name,
    phrase: report.phrase,
    recipe: report.recipe,
    seed: report.seed,
    version: `1.0.0-r${report.recipe}`,
    rule: report.rule,
    sha256: sha256(onnx),
    // onnx.ts names the head's tensors: input [1,16,96] (16 embeddings), output [1,1] (score 0..1).
    head: { file: 'head.onnx', input: 'input', output: 'score' },
    reproduce: command,
    training: {
      synthetic:
        'espeak-ng (stock and made-up timbres of the training accents), flite and festival voices (other-voices.ts)',
      real: usedReal ? trainingSources(report.phrase, report.development ? DEV_SOURCES : []) : [],
      sha256List: 'engine/tools/wake-keyword/real-sources.sha256',
      corpus: report.training,
    },
    generatorHeldOut: report.heldOut,
    ...(report.development ? { development: report.development } : {}),
    ...(report.mined ? { mined: report.mined } : {}),
    ...(figures === undefined ? {} : { figures }),
    licence:
      "Apache-2.0: the project's own trained weights (mnn-edge), trained on synthetic speech whose output carries " +
      'no licence and on the training split of the real recordings listed (each under its own licence, ' +
      'docs/WAKE.md); no audio of them is in the weights file or the repository',
  };
  mkdirSync(outDir, { recursive: true });
  copyFileSync(join(packageDir, `${report.name}.onnx`), join(outDir, 'head.onnx'));
  writeFileSync(join(outDir, 'keyword.json'), `${JSON.stringify(kept, null, 2)}\n`);
  return kept;
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const args = process.argv.slice(2);
  const flag = (name: string) => {
    const i = args.indexOf(name);
    if (i < 0) return undefined;
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const command = flag('--command');
  const figuresFile = flag('--figures');
  const [pkg, out] = args;
  if (!pkg || !out || !command) {
    console.error(
      'usage: keep-keyword.ts PACKAGE_DIR models/keywords/NAME --command "make-keyword …" [--figures F.json]',
    );
    process.exit(1);
  }
  const figures = figuresFile ? (JSON.parse(readFileSync(figuresFile, 'utf8')) as unknown) : undefined;
  const kept = keepKeyword(resolve(pkg), resolve(out), command, figures);
  console.log(`kept ${kept.name}: head.onnx ${kept.sha256}`);
}
