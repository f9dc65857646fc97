// The power-cut run's host side: the mosquitto broker the guest's agent publishes telemetry to (through user-mode
// networking's host address, 10.0.2.2, which QEMU maps to the host's loopback), and the recorder of every telemetry
// message it receives. The QEMU lock is qemu-lock.ts, shared with the system tier.
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, type MqttClient } from 'mqtt';
import { freePort } from './guest.js';

export interface Broker {
  port: number;
  stop: () => Promise<void>;
}

/** mosquitto on a free loopback port, anonymous, without persistence (the recorder stays connected). */
export async function startBroker(work: string): Promise<Broker> {
  const port = await freePort();
  const dir = join(work, 'mosquitto');
  mkdirSync(dir, { recursive: true });
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, `listener ${port} 127.0.0.1\nallow_anonymous true\npersistence false\n`);
  const child: ChildProcess = spawn('/usr/sbin/mosquitto', ['-c', conf], { stdio: 'ignore' });
  process.once('exit', () => child.kill('SIGKILL'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const deadline = Date.now() + 30_000;
  for (;;) {
    const probe = connect(`mqtt://127.0.0.1:${port}`, { reconnectPeriod: 0, connectTimeout: 3000 });
    const up = await new Promise<boolean>((resolve) => {
      probe.once('connect', () => resolve(true));
      probe.once('error', () => resolve(false));
      probe.once('close', () => resolve(false));
    });
    probe.end(true);
    if (up) break;
    if (Date.now() > deadline) throw new Error(`mosquitto did not listen on ${port} in 30 s`);
    await sleep(300);
  }
  return {
    port,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface Received {
  seq: number;
  /** The agent's production time (guest clock). */
  ts: number;
  /** Host clock at arrival. */
  at: number;
}

/** Every non-retained telemetry message the broker delivers (the retained on-subscribe copy is skipped, as the
 *  protocol tells counters to). */
export class TelemetryRecorder {
  readonly messages: Received[] = [];
  #client: MqttClient | undefined;

  async start(port: number): Promise<void> {
    const client = connect(`mqtt://127.0.0.1:${port}`, { protocolVersion: 5, reconnectPeriod: 1000 });
    this.#client = client;
    client.on('message', (_topic, payload, packet) => {
      if (packet.retain) return;
      try {
        const m = JSON.parse(payload.toString('utf8')) as { seq?: unknown; ts?: unknown };
        if (typeof m.seq === 'number' && typeof m.ts === 'number')
          this.messages.push({ seq: m.seq, ts: m.ts, at: Date.now() });
      } catch {
        // not telemetry
      }
    });
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
    });
    await client.subscribeAsync('mnn-edge/+/telemetry', { qos: 1 });
  }

  /** The newest production time received so far (0 before any). */
  newestTs(): number {
    return this.messages.reduce((m, r) => Math.max(m, r.ts), 0);
  }

  async stop(): Promise<void> {
    await this.#client?.endAsync();
  }
}
