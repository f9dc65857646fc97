import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { extname, join, relative, sep } from 'node:path';
import { gzipSync } from 'node:zlib';
import { HttpError } from '../../lib/http-error.js';
import type { RequestContext } from './router.js';

// The built dashboard is a few files (≤ 300 KB gzipped), so they are read and gzipped once at start and served
// from memory: no path is ever joined from a request, which rules out traversal by construction.

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
};

/** The page talks only to its own origin; media and worklets come from blob: URLs it makes itself. */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "worker-src 'self' blob:",
  "style-src 'self'",
  "script-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

interface StaticFile {
  body: Buffer;
  gzip: Buffer | undefined;
  type: string;
  etag: string;
}

export interface StaticSite {
  /** Relative paths ('index.html', 'assets/app.js'). */
  files(): string[];
  serve(ctx: RequestContext, path: string): void;
  readonly built: boolean;
}

function walk(dir: string, base: string, out: string[]): void {
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    if (statSync(full).isDirectory()) walk(full, base, out);
    else out.push(relative(base, full).split(sep).join('/'));
  }
}

export const NOT_BUILT_HTML = `<!doctype html><html lang="en"><meta charset="utf-8"><title>mnn-edge</title>
<body style="font-family:sans-serif;max-width:40em;margin:3em auto"><h1>Dashboard not built</h1>
<p>The agent is running, but its dashboard files are missing. Build them with <code>npm run build:dashboard</code>
(the image build does this), then reload. The JSON API under <code>/api/</code> works without them.</p></body></html>`;

export function loadStaticSite(distDir: string): StaticSite {
  const files = new Map<string, StaticFile>();
  if (existsSync(join(distDir, 'index.html'))) {
    const paths: string[] = [];
    walk(distDir, distDir, paths);
    for (const p of paths) {
      const body = readFileSync(join(distDir, p));
      const type = TYPES[extname(p)] ?? 'application/octet-stream';
      const compressible = type.startsWith('text/') || type.includes('json') || type.includes('svg');
      const gzip = compressible && body.length > 512 ? gzipSync(body, { level: 9 }) : undefined;
      const etag = `"${body.length.toString(16)}-${hash32(body)}"`;
      files.set(p, { body, gzip, type, etag });
    }
  }
  return {
    built: files.size > 0,
    files: () => [...files.keys()].sort(),
    serve(ctx, path) {
      const file = files.get(path);
      const headers: Record<string, string> = {
        'X-Content-Type-Options': 'nosniff',
        'Referrer-Policy': 'no-referrer',
        'X-Frame-Options': 'DENY',
      };
      if (file === undefined) {
        if (path === 'index.html') {
          ctx.res.writeHead(503, {
            ...headers,
            'Content-Type': 'text/html; charset=utf-8',
            'Cache-Control': 'no-store',
          });
          ctx.res.end(NOT_BUILT_HTML);
          return;
        }
        throw new HttpError(404, 'not_found', `No dashboard file ${path}`);
      }
      headers['Content-Type'] = file.type;
      headers['ETag'] = file.etag;
      headers['Vary'] = 'Accept-Encoding';
      // index.html names the bundles, so it is revalidated; the bundles themselves change name with content.
      headers['Cache-Control'] = path === 'index.html' ? 'no-cache' : 'public, max-age=3600';
      if (file.type.startsWith('text/html')) headers['Content-Security-Policy'] = CONTENT_SECURITY_POLICY;
      if (ctx.req.headers['if-none-match'] === file.etag) {
        ctx.res.writeHead(304, headers);
        ctx.res.end();
        return;
      }
      const gzipOk =
        file.gzip !== undefined && /\bgzip\b/.test(String(ctx.req.headers['accept-encoding'] ?? ''));
      const body = gzipOk ? file.gzip! : file.body;
      if (gzipOk) headers['Content-Encoding'] = 'gzip';
      headers['Content-Length'] = String(body.length);
      ctx.res.writeHead(200, headers);
      ctx.res.end(ctx.req.method === 'HEAD' ? undefined : body);
    },
  };
}

/** FNV-1a over the content: an ETag only needs to change when the bytes do. */
function hash32(buf: Buffer): string {
  let h = 0x811c9dc5;
  for (const byte of buf) h = Math.imul(h ^ byte, 0x01000193) >>> 0;
  return h.toString(36);
}
