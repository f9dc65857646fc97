// stage-manifest.txt is the single list of what the mnn-edge recipe installs; the recipe's do_install and
// `npm run stage` both read it, so a staged tree and the image cannot drift apart.

export type StageEntry =
  | { kind: 'keep'; path: string; optional: boolean }
  | { kind: 'file'; mode: number; source: { from: 'layer' | 'src'; path: string }; dest: string }
  | { kind: 'link'; target: string; dest: string };

export interface StageManifest {
  /** Absolute directory npm installs the package into. */
  app: string;
  entries: StageEntry[];
}

function relativeClean(path: string, what: string, where: string): string {
  if (path.startsWith('/') || path.split('/').some((part) => part === '..' || part === '')) {
    throw new Error(`${where}: ${what} must be a relative path inside the tree, got ${JSON.stringify(path)}`);
  }
  return path;
}

function absolute(path: string, what: string, where: string): string {
  if (
    !path.startsWith('/') ||
    path
      .split('/')
      .slice(1)
      .some((p) => p === '..' || p === '')
  ) {
    throw new Error(`${where}: ${what} must be an absolute path, got ${JSON.stringify(path)}`);
  }
  return path;
}

export function parseStageManifest(text: string, name = 'stage-manifest.txt'): StageManifest {
  let app: string | undefined;
  const entries: StageEntry[] = [];
  const seenDest = new Set<string>();
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const where = `${name}:${index + 1}`;
    const [kind, ...args] = line.split(/\s+/);
    const expect = (n: number, form: string) => {
      if (args.length !== n) throw new Error(`${where}: expected "${form}", got ${JSON.stringify(line)}`);
    };
    switch (kind) {
      case 'app':
        expect(1, 'app DIR');
        if (app !== undefined) throw new Error(`${where}: a second app line`);
        app = absolute(args[0]!, 'the app directory', where);
        break;
      case 'keep':
      case 'keep?':
        expect(1, `${kind} PATH`);
        entries.push({
          kind: 'keep',
          path: relativeClean(args[0]!, 'a kept path', where),
          optional: kind === 'keep?',
        });
        break;
      case 'file': {
        expect(3, 'file MODE SOURCE DEST');
        const [modeText, sourceText, destText] = args as [string, string, string];
        if (!/^0[0-7]{3}$/.test(modeText)) {
          throw new Error(`${where}: file mode must be octal like 0644, got ${JSON.stringify(modeText)}`);
        }
        const m = /^(layer|src):(.+)$/.exec(sourceText);
        if (!m)
          throw new Error(
            `${where}: file source must be layer:NAME or src:PATH, got ${JSON.stringify(sourceText)}`,
          );
        const dest = absolute(destText, 'a file destination', where);
        if (seenDest.has(dest)) throw new Error(`${where}: ${dest} is installed twice`);
        seenDest.add(dest);
        entries.push({
          kind: 'file',
          mode: Number.parseInt(modeText, 8),
          source: { from: m[1] as 'layer' | 'src', path: relativeClean(m[2]!, 'a file source', where) },
          dest,
        });
        break;
      }
      case 'link': {
        expect(2, 'link TARGET DEST');
        const dest = absolute(args[1]!, 'a link destination', where);
        if (seenDest.has(dest)) throw new Error(`${where}: ${dest} is installed twice`);
        seenDest.add(dest);
        entries.push({ kind: 'link', target: args[0]!, dest });
        break;
      }
      default:
        throw new Error(
          `${where}: unknown entry kind ${JSON.stringify(kind)} (expected app, keep, keep?, file, link)`,
        );
    }
  }
  if (app === undefined) throw new Error(`${name}: no "app DIR" line`);
  return { app, entries };
}

/** What the scripts read of package-lock.json (and of a shrinkwrap, which has the same shape). */
export interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  license?: string;
  dev?: boolean;
  optional?: boolean;
  devOptional?: boolean;
  link?: boolean;
  /** Names → version ranges a package requires (the root entry also has devDependencies). */
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
}

export interface PackageLock {
  lockfileVersion?: number;
  packages: Record<string, LockEntry>;
}
