// Starting an engine host process: where its entry is (source under tsx, tsc's tree, or beside the bundled CLI),
// the fork with MNN's prints turned into log lines, and the wait for its `ready` (or why it never came).
import { type ChildProcess, fork } from 'node:child_process';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../../../lib/log.js';
import { EngineError } from '../errors.js';
import { packageRootAbove } from '../package-root.js';
import { onLines } from './lines.js';
import { isHostResponse } from './protocol.js';

export interface HostExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export function describeExit(e: HostExit): string {
  return e.signal ? `signal ${e.signal}` : `code ${e.code}`;
}

function hostEntry(): { path: string; execArgv: string[] } {
  const self = fileURLToPath(import.meta.url);
  if (self.endsWith('.ts')) {
    // Running from source (tests, tsx): the child needs the same TypeScript loader.
    return {
      path: self.replace(/host-process\.ts$/, 'host-main.ts'),
      execArgv: ['--import', import.meta.resolve('tsx')],
    };
  }
  if (self.endsWith('host-process.js'))
    return { path: self.replace(/host-process\.js$/, 'host-main.js'), execArgv: [] };
  // Bundled into the CLI (dist/agent/cli): the host runs from tsc's tree, which the build keeps beside it.
  const root = packageRootAbove(dirname(self));
  if (!root) throw new Error(`cannot find the mnn-edge package above ${self} to start an engine host`);
  return { path: join(root, 'dist', 'engine', 'src', 'host', 'host-main.js'), execArgv: [] };
}

export interface ForkHostOptions {
  name: string;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  timeoutMs: number;
  log: Logger;
  /** Each line the host prints (MNN's diagnostics on stdout, errors on stderr). */
  onLog(stream: 'stdout' | 'stderr', line: string): void;
}

/** Forks a host; `ready` settles once it said so, or rejects when it exits first or says nothing in time. */
export function forkHost(o: ForkHostOptions): { child: ChildProcess; ready: Promise<void> } {
  const entry = hostEntry();
  const recentStderr: string[] = [];
  const child = fork(entry.path, [], {
    execArgv: entry.execArgv,
    cwd: o.cwd ?? tmpdir(),
    env: o.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    serialization: 'advanced',
  });
  // MNN prints diagnostics on stdout: they become log records, never protocol.
  onLines(child.stdout!, (line) => {
    o.log.info('mnn', { pid: child.pid, line });
    o.onLog('stdout', line);
  });
  onLines(child.stderr!, (line) => {
    recentStderr.push(line);
    if (recentStderr.length > 20) recentStderr.shift();
    o.log.warn('stderr', { pid: child.pid, line });
    o.onLog('stderr', line);
  });
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new EngineError('ETIMEDOUT', `engine host ${o.name} did not start within ${o.timeoutMs} ms`));
    }, o.timeoutMs);
    child.once('message', (m: unknown) => {
      clearTimeout(timer);
      if (isHostResponse(m) && m.type === 'ready') resolve();
      else
        reject(
          new EngineError('EENGINE', `engine host ${o.name} sent ${JSON.stringify(m)} instead of ready`),
        );
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      const tail = recentStderr.slice(-5).join(' | ');
      reject(
        new EngineError(
          'EHOSTEXIT',
          `engine host ${o.name} exited with ${describeExit({ code, signal })} before it was ready${tail ? `: ${tail}` : ''}`,
          { code, signal },
        ),
      );
    });
  });
  return { child, ready };
}
