// The keyword the product ships, as the repository holds it (docs/WAKE.md, "Shipped keyword"):
//
//   models/keywords/default.json          {"keyword": "<name>", "why": "…"}
//   models/keywords/<name>/head.onnx       the trained head (the project's own weights)
//   models/keywords/<name>/keyword.json    name, phrase, recipe, seed, rule, sha256 of head.onnx, reproduce, …
//
// Any number of keyword directories may sit beside each other ("hey_computer" and "computer"); default.json picks
// the one a board uses without being told. Everything is checked here, so a wrong head is named before it is
// converted, let alone shipped.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MnnEdgeError } from '../../lib/errors.js';
import { MODEL_ID_PATTERN, SEMVER_PATTERN } from '../manifest/schema.js';

export const KEYWORD_HEAD_FILE = 'head.onnx';
export const KEYWORD_META_FILE = 'keyword.json';
export const DEFAULT_KEYWORD_FILE = 'default.json';

/**
 * The repository's keywords, models/keywords of the checkout this code runs from: found upwards from here, so the
 * sources (tsx), dist/ and the bundled CLI all find it. A packaged agent has none (the path then does not exist).
 */
export const REPO_KEYWORDS_DIR = ((): string => {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let up = 0; up < 5; up++, dir = dirname(dir)) {
    const candidate = join(dir, 'models', 'keywords');
    if (existsSync(join(candidate, DEFAULT_KEYWORD_FILE))) return candidate;
  }
  return join(dirname(fileURLToPath(import.meta.url)), '..', 'keywords');
})();

export interface KeywordRule {
  threshold: number;
  triggerFrames: number;
  refractoryMs: number;
}

export interface ShippedKeyword {
  name: string;
  phrase: string;
  /** The store's version of the assembled package: keyword.json's `version`, else one made from the sha256. */
  version: string;
  rule: KeywordRule;
  sha256: string;
  /** What the head is under and how it was made (keyword.json's `licence`, `recipe`, `seed`, `reproduce`). */
  licence: string;
  recipe: string;
  seed?: number;
  reproduce?: string;
  /** Set when keyword.json says the head is a stand-in (the tests' quick model). */
  placeholder?: string;
  dir: string;
  headPath: string;
}

/** Keyword names become file names (<name>.mnn) and part of a model id: the store's id alphabet, no dot. */
const NAME = /^[a-z0-9][a-z0-9_-]{0,56}$/;

/** The model id the assembled package is installed under. */
export function wakeModelId(name: string): string {
  return `wake-${name}`;
}

const bad = (where: string, what: string) => new MnnEdgeError('EMANIFEST', `${where}: ${what}`);

function readJson(path: string): Record<string, unknown> {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw bad(path, `cannot be read as JSON (${(err as Error).message.split('\n')[0]})`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw bad(path, 'must hold a JSON object');
  return raw as Record<string, unknown>;
}

export function sha256File(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

function ruleOf(where: string, v: unknown): KeywordRule {
  const r = (typeof v === 'object' && v !== null ? v : {}) as Record<string, unknown>;
  const num = (key: string, lo: number, hi: number): number => {
    const x = r[key];
    if (typeof x !== 'number' || !(x >= lo && x <= hi))
      throw bad(where, `rule.${key} must be a number in [${lo}, ${hi}], got ${JSON.stringify(x)}`);
    return x;
  };
  return {
    threshold: num('threshold', 0.01, 0.99),
    triggerFrames: num('triggerFrames', 1, 50),
    refractoryMs: num('refractoryMs', 0, 60_000),
  };
}

/**
 * One keyword directory, read and checked: keyword.json's fields and the head's sha256 against the one it
 * records (a mismatch is one line naming both).
 */
export function readKeyword(keywordsDir: string, name: string): ShippedKeyword {
  if (!NAME.test(name))
    throw bad(keywordsDir, `keyword name ${JSON.stringify(name)} must match ${NAME.source}`);
  const dir = join(keywordsDir, name);
  const metaPath = join(dir, KEYWORD_META_FILE);
  if (!existsSync(metaPath)) throw bad(dir, `no ${KEYWORD_META_FILE}: not a keyword directory`);
  const m = readJson(metaPath);
  const str = (key: string, required: boolean): string | undefined => {
    const v = m[key];
    if (v === undefined && !required) return undefined;
    if (typeof v !== 'string' || v.length === 0) throw bad(metaPath, `"${key}" must be a non-empty string`);
    return v;
  };
  if (m['name'] !== name)
    throw bad(metaPath, `"name" is ${JSON.stringify(m['name'])}, its directory ${name}`);
  const sha256 = str('sha256', true)!;
  if (!/^[0-9a-f]{64}$/.test(sha256)) throw bad(metaPath, '"sha256" must be 64 lowercase hex digits');
  const headPath = join(dir, KEYWORD_HEAD_FILE);
  if (!existsSync(headPath)) throw bad(dir, `no ${KEYWORD_HEAD_FILE}`);
  const got = sha256File(headPath);
  if (got !== sha256)
    throw bad(headPath, `sha256 ${got} does not match ${sha256} recorded in ${KEYWORD_META_FILE}`);
  const version = str('version', false) ?? `1.0.0-h${sha256.slice(0, 12)}`;
  if (!new RegExp(SEMVER_PATTERN).test(version))
    throw bad(metaPath, `"version" ${JSON.stringify(version)} is not a semantic version (X.Y.Z[-pre])`);
  if (!new RegExp(MODEL_ID_PATTERN).test(wakeModelId(name))) throw bad(metaPath, `name ${name} is too long`);
  const seed = m['seed'];
  const recipe = m['recipe'];
  return {
    name,
    phrase: str('phrase', true)!,
    version,
    rule: ruleOf(metaPath, m['rule']),
    sha256,
    licence: str('licence', true)!,
    recipe: typeof recipe === 'number' ? String(recipe) : (str('recipe', true) ?? ''),
    ...(typeof seed === 'number' ? { seed } : {}),
    ...(typeof m['reproduce'] === 'string' ? { reproduce: m['reproduce'] } : {}),
    ...(typeof m['placeholder'] === 'string' ? { placeholder: m['placeholder'] } : {}),
    dir,
    headPath,
  };
}

/** The keyword directories present (any of "hey_computer", "computer", …), sorted. */
export function keywordNames(keywordsDir: string): string[] {
  if (!existsSync(keywordsDir)) return [];
  return readdirSync(keywordsDir, { withFileTypes: true })
    .filter((e) => e.isDirectory() && existsSync(join(keywordsDir, e.name, KEYWORD_META_FILE)))
    .map((e) => e.name)
    .sort();
}

/** default.json's keyword, checked to be one of the directories beside it. */
export function defaultKeywordName(keywordsDir: string): string {
  const path = join(keywordsDir, DEFAULT_KEYWORD_FILE);
  if (!existsSync(path)) throw bad(keywordsDir, `no ${DEFAULT_KEYWORD_FILE} naming the default keyword`);
  const name = readJson(path)['keyword'];
  const names = keywordNames(keywordsDir);
  if (typeof name !== 'string' || !names.includes(name))
    throw bad(
      path,
      `"keyword" is ${JSON.stringify(name)}; the keywords here are ${names.join(', ') || 'none'}`,
    );
  return name;
}
