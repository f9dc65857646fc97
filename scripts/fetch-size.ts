// How many bytes BitBake's npmsw fetcher downloads for a shrinkwrap: the Content-Length of each package's
// tarball, asked from the registry with HEAD requests (a few at a time, nothing downloaded).
import type { PackageLock } from './stage-manifest.js';

const REGISTRY = 'https://registry.npmjs.org';

export interface FetchSize {
  packages: number;
  bytes: number;
}

function tarballUrl(key: string, version: string | undefined, resolved: string | undefined): string {
  if (resolved) return resolved;
  const name = key.slice(key.lastIndexOf('node_modules/') + 'node_modules/'.length);
  return `${REGISTRY}/${name}/-/${name.slice(name.lastIndexOf('/') + 1)}-${version}.tgz`;
}

export async function measureFetch(lock: PackageLock, parallel = 8): Promise<FetchSize> {
  const urls = [
    ...new Set(
      Object.entries(lock.packages)
        .filter(([key, e]) => key !== '' && !e.link)
        .map(([key, e]) => tarballUrl(key, e.version, e.resolved)),
    ),
  ];
  let bytes = 0;
  let next = 0;
  const worker = async () => {
    while (next < urls.length) {
      const url = urls[next++]!;
      const response = await fetch(url, { method: 'HEAD', redirect: 'follow' });
      const length = Number(response.headers.get('content-length'));
      if (!response.ok || !Number.isFinite(length)) {
        throw new Error(
          `HEAD ${url}: ${response.status}, content-length ${response.headers.get('content-length')}`,
        );
      }
      bytes += length;
    }
  };
  await Promise.all(Array.from({ length: parallel }, worker));
  return { packages: urls.length, bytes };
}
