// Real recordings for the wake word (issue 45): which Debian packages and public repositories give music, speech,
// ambient sound and real speakers saying the keyword, which split each belongs to, and under what licence. The
// audio itself is never in the repository: real-fetch.ts downloads it into the machine's cache and checks it
// against real-sources.sha256 (kept here). Training and evaluation never share a source: every source is in
// one split, and where a repository holds both (Precise's "computer"), the split is by speaker.
import { existsSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';

export type RealSplit = 'train' | 'eval';
/** What a clip is: background a board must ignore, or the keyword said by a real person. */
export type RealRole = 'music' | 'speech' | 'ambient' | 'keyword';

interface SourceBase {
  /** Directory name in the cache and key in real-sources.sha256. */
  id: string;
  role: RealRole;
  /** Licence as read from the package's copyright file or the repository. */
  licence: string;
}

export interface DebSource extends SourceBase {
  kind: 'deb';
  package: string;
  version: string;
  split: RealSplit;
  /** Audio paths (inside the package, and inside the .pk3/.zip archives it ships) to take; default all. */
  include?: RegExp;
}

/** One part of a repository snapshot; files are split by `splitOf` (speaker) or all to `split`. */
export interface GitSource extends SourceBase {
  kind: 'git';
  repo: string;
  commit: string;
  /** Folders of the repository to take (audio files only). */
  paths: string[];
  exclude?: RegExp;
  split: RealSplit;
  /** The phrase the clips say (role keyword). */
  phrase?: string;
  /** Speaker of each file, where the repository says it. */
  speakerOf?: (path: string, repo: RepoReader) => string | undefined;
  /** Files of the repository `speakerOf` reads. */
  speakerFiles?: readonly string[];
  /** Speakers of this source that are in the other split than `split`. */
  otherSplitSpeakers?: readonly string[];
}

export type RealSource = DebSource | GitSource;

/** Reads a file of the repository snapshot (for speaker lists kept in it). */
export type RepoReader = (path: string) => string;

const debianMusic = 'music' as const;
const KRIS = 'licenses/license-20190814-krisgesling.txt';

/**
 * The sources. Splits: evaluation holds ufoai-music, wesnoth's and nexuiz's music (7.5 h), Asterisk's prompts in
 * five languages, the Czech dialogue of fillets-ng, Precise's el-tocino clips and every Picovoice clip (its speakers
 * have no ids, so none of them may train); training holds the rest. docs/WAKE.md has the table and the hours.
 */
export const REAL_SOURCES: readonly RealSource[] = [
  // ---- music, held out
  {
    kind: 'deb',
    id: 'ufoai-music',
    package: 'ufoai-music',
    version: '2.5-2',
    split: 'eval',
    role: debianMusic,
    licence: 'GPL-2+ (Files: *; some tracks CC BY 3.0, CC BY-SA 3.0 or public domain, per file)',
  },
  {
    kind: 'deb',
    id: 'wesnoth-music',
    package: 'wesnoth-1.16-music',
    version: '1:1.16.9-1',
    split: 'eval',
    role: debianMusic,
    licence: 'GPL-2+',
  },
  {
    kind: 'deb',
    id: 'nexuiz-music',
    package: 'nexuiz-music',
    version: '2.5.2-12',
    split: 'eval',
    role: debianMusic,
    licence: 'GPL-2+',
  },
  // ---- music and ambient sound, training
  {
    kind: 'deb',
    id: '0ad-audio',
    package: '0ad-data',
    version: '0.0.26-1',
    split: 'train',
    role: debianMusic,
    include: /(^|\/)audio\/(music|ambient)\//,
    licence: 'CC BY-SA 3.0 (Files: *, Wildfire Games)',
  },
  {
    kind: 'deb',
    id: 'planetblupi-music',
    package: 'planetblupi-music-ogg',
    version: '1.14.2-3',
    split: 'train',
    role: debianMusic,
    licence: 'GPL-3+',
  },
  {
    kind: 'deb',
    id: 'widelands-audio',
    package: 'widelands-data',
    version: '2:1.1-3',
    split: 'train',
    role: debianMusic,
    include: /\/(music|sound)\//,
    licence: 'GPL-2+ (Files: *; three music tracks CC BY-SA 3.0)',
  },
  {
    kind: 'deb',
    id: 'hedgewars-audio',
    package: 'hedgewars-data',
    version: '1.0.2-6',
    split: 'train',
    role: debianMusic,
    licence: 'GPL-2 (Files: *), GFDL-1.3 (Data/Sounds), a few sounds CC BY-SA 3.0 (freesound.org)',
  },
  {
    kind: 'deb',
    id: 'megaglest-audio',
    package: 'megaglest-data',
    version: '3.13.0-3',
    split: 'train',
    role: debianMusic,
    licence: 'CC BY-SA 3.0 (Files: *, the Glest and MegaGlest teams)',
  },
  {
    kind: 'deb',
    id: 'supertuxkart-audio',
    package: 'supertuxkart-data',
    version: '1.4+dfsg-2',
    split: 'train',
    role: debianMusic,
    include: /\/(music|sfx)\//,
    licence: 'per file: CC BY-SA 3.0/4.0, CC BY 3.0, CC0, public domain, GPL-2 (debian/copyright)',
  },
  {
    kind: 'deb',
    id: 'colobot-sounds',
    package: 'colobot-common-sounds',
    version: '0.2.0-2',
    split: 'train',
    role: debianMusic,
    licence: 'GPL-3+ (Files: *)',
  },
  {
    kind: 'deb',
    id: 'singularity-music',
    package: 'singularity-music',
    version: '007-2',
    split: 'train',
    role: debianMusic,
    licence: 'CC BY-SA 3.0 (Max McCracken; the licence text in full)',
  },
  {
    kind: 'deb',
    id: 'freedroidrpg-audio',
    package: 'freedroidrpg-data',
    version: '1.0-1',
    split: 'train',
    role: debianMusic,
    licence: 'GPL-2+ (Files: *)',
  },
  {
    kind: 'deb',
    id: 'flare-audio',
    package: 'flare-game',
    version: '1.14-1',
    split: 'train',
    role: debianMusic,
    licence: 'CC BY-SA 3.0+ (Files: *)',
  },
  // ---- recorded speech, held out
  ...(['en', 'es', 'fr', 'it', 'ru'] as const).map(
    (lang): DebSource => ({
      kind: 'deb',
      id: `asterisk-${lang}`,
      package: `asterisk-core-sounds-${lang}-wav`,
      version: '1.6.1-1',
      split: 'eval',
      role: 'speech',
      licence: 'CC BY-SA 3.0 (the recordings, made for Digium, Inc.)',
    }),
  ),
  {
    kind: 'deb',
    id: 'fillets-cs',
    package: 'fillets-ng-data-cs',
    version: '1.0.1-1.1',
    split: 'eval',
    role: 'speech',
    licence: 'GPL-2 (version 2 only)',
  },
  // ---- recorded speech, training
  {
    kind: 'deb',
    id: 'tuxpaint-stamps',
    package: 'tuxpaint-stamps-default',
    version: '2022.06.04-1',
    split: 'train',
    role: 'speech',
    licence: 'GPL-2 (Files: *)',
  },
  {
    kind: 'deb',
    id: 'klettres',
    package: 'klettres-data',
    version: '4:22.12.3-1',
    split: 'train',
    role: 'speech',
    licence: 'GPL-2+ (Files: *)',
  },
  {
    kind: 'deb',
    id: 'ktuberling',
    package: 'ktuberling-data',
    version: '4:22.12.3-1',
    split: 'train',
    role: 'speech',
    licence: 'GPL-2+ (Files: *)',
  },
  // ---- real speakers (Precise: public-domain waivers per contributor, licenses/; heysavant, CC BY-NC-SA, never taken)
  {
    kind: 'git',
    id: 'precise-computer',
    repo: 'MycroftAI/Precise-Community-Data',
    commit: '4854e39b7f8c0e14d387d4e135aa10486f5158bf',
    paths: ['computer/en'],
    split: 'train',
    role: 'keyword',
    phrase: 'computer',
    licence:
      'public domain (waivers of Kris Gesling, licenses/license-20190814-krisgesling.txt, and el-tocino)',
    // Kris Gesling's 47 clips train; el-tocino's 10 judge, with his "hey computer" clips.
    speakerOf: precisePeople,
    speakerFiles: [KRIS],
    otherSplitSpeakers: ['el-tocino'],
  },
  {
    kind: 'git',
    id: 'precise-hey-computer',
    repo: 'MycroftAI/Precise-Community-Data',
    commit: '4854e39b7f8c0e14d387d4e135aa10486f5158bf',
    paths: ['heycomputer/en'],
    split: 'eval',
    role: 'keyword',
    phrase: 'hey computer',
    licence: "public domain (el-tocino's waiver, licenses/license-2019*-el-tocino.txt)",
    speakerOf: () => 'el-tocino',
  },
  {
    kind: 'git',
    id: 'precise-not-wake-words-en',
    repo: 'MycroftAI/Precise-Community-Data',
    commit: '4854e39b7f8c0e14d387d4e135aa10486f5158bf',
    paths: ['not-wake-words/en'],
    split: 'eval',
    role: 'speech',
    licence: "public domain (el-tocino's waiver)",
    speakerOf: () => 'el-tocino',
  },
  {
    kind: 'git',
    id: 'picovoice-computer',
    repo: 'Picovoice/wake-word-benchmark',
    commit: '84919190fb1891bf0936dcb577d9268e467f876f',
    paths: ['audio/computer'],
    split: 'eval',
    role: 'keyword',
    phrase: 'computer',
    licence: 'Apache-2.0 (repository)',
  },
  {
    // The same crowd's other wake words: real voices saying something else (multiple_keywords.wav, which
    // strings the keywords together, is left out).
    kind: 'git',
    id: 'picovoice-other-words',
    repo: 'Picovoice/wake-word-benchmark',
    commit: '84919190fb1891bf0936dcb577d9268e467f876f',
    paths: ['audio/alexa', 'audio/jarvis', 'audio/smart mirror', 'audio/snowboy', 'audio/view glass'],
    split: 'eval',
    role: 'speech',
    licence: 'Apache-2.0 (repository)',
  },
  // ---- neural voices, negatives for training (each voice's licence in its voices/<lang>/<voice>/LICENSE)
  {
    kind: 'git',
    id: 'mimic3-samples',
    repo: 'MycroftAI/mimic3-voices',
    commit: 'b239a9084e21fbaa7ac78ea6e31f5de1c31c8f42',
    paths: ['samples'],
    split: 'train',
    role: 'speech',
    // sw/lanfrica_low has no licence file in the repository: left out.
    exclude: /^samples\/sw\//,
    licence:
      'per voice: CC0, CC BY 4.0, CC BY-SA 4.0, public domain, CMU/M-AILABS BSD-style (voices/*/LICENSE)',
  },
];

/** Precise's "computer" clips: Kris Gesling's are listed in his licence file; the rest are el-tocino's. */
function precisePeople(path: string, repo: RepoReader): string {
  const kris = repo(KRIS);
  return kris.includes(path) ? 'krisgesling' : 'el-tocino';
}

export function realAudioCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  return join(env['MNN_EDGE_CACHE'] ?? join(homedir(), '.cache', 'mnn-edge'), 'wake-audio');
}

export const SHA256_LIST = new URL('./real-sources.sha256', import.meta.url).pathname;

/** The sha256 list kept in the repository: source id → expected digest. */
export function expectedDigests(path = SHA256_LIST): Map<string, string> {
  const out = new Map<string, string>();
  if (!existsSync(path)) return out;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^([0-9a-f]{64})\s+(\S+)/.exec(line.trim());
    if (m) out.set(m[2]!, m[1]!);
  }
  return out;
}

export interface RealFile {
  /** Path under the source's cache directory. */
  path: string;
  seconds: number;
  speaker?: string;
  split: RealSplit;
}

/** What real-fetch.ts writes beside each source's audio. */
export interface RealIndex {
  id: string;
  sha256: string;
  role: RealRole;
  phrase?: string;
  licence: string;
  seconds: number;
  files: RealFile[];
}
