// A simulated fleet spread over several processes (sim-worker.ts), for N beyond one process's descriptors.
// Board ids are `p<k>-0001` …, so every process's boards are distinct.
import { type ChildProcess, fork } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface SimProcs {
  online(): number;
  /** The sum of the processes' RSS, as they last reported it. */
  rss(): number;
  stop(): Promise<void>;
}

export function startSimProcs(o: {
  procs: number;
  perProc: number;
  urls: string[];
  protocolVersion: 4 | 5;
  dir: string;
}): SimProcs {
  const worker = join(fileURLToPath(new URL('.', import.meta.url)), 'sim-worker.ts');
  const state: { online: number; rss: number }[] = [];
  const children: ChildProcess[] = [];
  for (let k = 0; k < o.procs; k++) {
    state.push({ online: 0, rss: 0 });
    const args = {
      count: o.perProc,
      prefix: `p${k + 1}`,
      urls: o.urls,
      protocolVersion: o.protocolVersion,
      dir: join(o.dir, `p${k + 1}`),
    };
    const child = fork(worker, [JSON.stringify(args)], { execArgv: ['--import=tsx'], stdio: 'inherit' });
    child.on('message', (m: { online: number; rss: number }) => {
      state[k] = m;
    });
    children.push(child);
  }
  return {
    online: () => state.reduce((sum, s) => sum + s.online, 0),
    rss: () => state.reduce((sum, s) => sum + s.rss, 0),
    async stop() {
      await Promise.all(
        children.map(
          (c) =>
            new Promise<void>((resolve) => {
              if (c.exitCode !== null) return resolve();
              const kill = setTimeout(() => c.kill('SIGKILL'), 60_000);
              c.once('exit', () => {
                clearTimeout(kill);
                resolve();
              });
              c.send('stop');
            }),
        ),
      );
    },
  };
}
