// One simulated board built from the real device code: the real fleet agent (its own MQTT connection with
// presence and Last Will, subscription registry, retained documents, command server, telemetry outbox) and the
// real OTA job runner with its SQLite journal, trust store and HTTP downloader, all on the board's own SQLite
// file. Only what needs a board is stubbed: samplers return fixed numbers, the package installer records the
// verified tarball instead of unpacking models, and the health probe answers with the outcome the test chose.
// Many of these run in one process (bench/fleet, test/integration/fleet-sim.test.ts).
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createFleetAgent, type FleetAgent } from '../../agent/fleet/agent.js';
import type { BoardInfo } from '../../agent/fleet/protocol.js';
import { type Db, openStore } from '../../agent/store/database.js';
import type { Sampler } from '../../agent/telemetry/samplers.js';
import { systemClock } from '../../lib/clock.js';
import { createLogger, type Logger } from '../../lib/log.js';
import type { ActivationPort, HealthProbe } from '../../lib/ota-ports.js';
import { type OtaConfig, otaDefaults } from '../../ota/config.js';
import { attachOtaToMqtt, type OtaDeviceLink } from '../../ota/jobs/mqtt-device.js';
import type { PackageInstaller } from '../../ota/jobs/ports.js';
import { createOtaDevice, type OtaDevice } from '../../ota/module.js';

export type HealthOutcome = 'pass' | 'fail';

export interface SimDeviceOptions {
  deviceId: string;
  tags: string[];
  board: BoardInfo;
  /** Broker nodes in the order this device tries them (a fleet spreads its devices by rotating the list). */
  urls: string[];
  protocolVersion: 4 | 5;
  dir: string;
  ota: Pick<OtaConfig, 'trustedKeys'> & Partial<OtaConfig>;
  /** What the health probe answers for a version (a failing gate rolls the device back). */
  health: (version: string) => HealthOutcome;
  telemetryIntervalMs: number;
  reconnect: { minMs: number; maxMs: number };
  keepaliveSec?: number;
  /** Sees warnings and errors of every part; silent by default. */
  logger?: Logger;
}

const fixedSampler: Sampler = {
  name: 'sim',
  async sample() {
    return { 'cpu.load_pct': 7, 'mem.used_pct': 41, 'temp.soc_c': 48 };
  },
};

const silent = createLogger({ level: 'error', write: () => undefined });

export class SimDevice {
  readonly id: string;
  readonly o: SimDeviceOptions;
  /** Activations per version: more than one of a version is a double install. */
  readonly activations = new Map<string, number>();
  /** The version serving now. */
  active: string | undefined;
  agent: FleetAgent | undefined;
  #db: Db | undefined;
  #ota: OtaDevice | undefined;
  #link: OtaDeviceLink | undefined;

  constructor(o: SimDeviceOptions) {
    this.id = o.deviceId;
    this.o = o;
  }

  get online(): boolean {
    return this.agent?.connected === true;
  }

  get brokerUrl(): string | undefined {
    return this.agent?.brokerUrl;
  }

  async start(): Promise<void> {
    const o = this.o;
    const dir = join(o.dir, o.deviceId);
    mkdirSync(dir, { recursive: true });
    const db = openStore(join(dir, 'agent.db'));
    this.#db = db;
    const log = o.logger ?? silent;
    const agent = createFleetAgent({
      config: {
        mqtt: {
          urls: o.urls,
          protocolVersion: o.protocolVersion,
          embeddedBroker: { enabled: false, port: 0, host: '127.0.0.1' },
          reconnect: o.reconnect,
          keepaliveSec: o.keepaliveSec ?? 30,
          sessionExpirySec: 3600,
        },
        telemetry: {
          sampleIntervalMs: o.telemetryIntervalMs,
          publishIntervalMs: o.telemetryIntervalMs,
          outbox: {
            maxMessages: 1000,
            maxBytes: 1024 * 1024,
            messageExpirySec: 3600,
            flushIntervalMs: 5000,
            drainRatePerSec: 0,
            maxInflight: 8,
          },
        },
        root: join(dir, 'no-root'),
        dataDir: dir,
      },
      db,
      logger: log,
      deviceId: o.deviceId,
      tags: o.tags,
      board: () => o.board,
      clock: systemClock,
      agentVersion: '0.1.0-sim',
      samplers: [fixedSampler],
      runtime: {
        slots: () => [
          {
            slot: 'chat',
            ...(this.active ? { model: `tiny-llm@${this.active}` } : {}),
            requests: 0,
            errors: 0,
          },
        ],
      },
    });
    this.agent = agent;
    const config: OtaConfig = {
      ...otaDefaults,
      ...o.ota,
      download: { ...otaDefaults.download, ...o.ota.download, headroomBytes: 0 },
    };
    this.#ota = createOtaDevice({
      db,
      dataDir: dir,
      config,
      facts: { deviceId: o.deviceId, tags: o.tags, arch: process.arch },
      time: { trustedNow: () => Date.now(), clockStatus: () => ({ synchronized: true, evidence: 'sim' }) },
      logger: log,
      ports: { installer: this.#installer(), activation: this.#activation(), probe: this.#probe() },
    });
    this.#ota.runner.start();
    this.#link = attachOtaToMqtt(agent, this.#ota.runner, { deviceId: o.deviceId, tags: o.tags }, log);
    this.#publishModels();
    await agent.start();
  }

  async stop(): Promise<void> {
    await this.#link?.detach();
    await this.#ota?.runner.stop();
    await this.agent?.stop();
    this.#db?.close();
  }

  #publishModels(): void {
    const v = this.active ? `tiny-llm@${this.active}` : '';
    this.agent?.setDocument('models', { installedVersion: v, latestVersion: v });
  }

  #installer(): PackageInstaller {
    // The tarball arrived through the real downloader and matched the signed length and sha256; a real board
    // would unpack it into the model store here.
    return { install: async () => undefined };
  }

  #activation(): ActivationPort {
    let previous: string | undefined;
    return {
      activeVersion: async () => this.active,
      activate: async (_id, version) => {
        previous = this.active;
        this.activations.set(version, (this.activations.get(version) ?? 0) + 1);
        this.active = version;
        return { serving: true };
      },
      rollback: async (_id, version) => {
        this.active = version ?? previous;
        this.#publishModels();
      },
      commit: async () => this.#publishModels(),
    };
  }

  #probe(): HealthProbe {
    return {
      measure: async (r) => {
        if (this.o.health(r.version) === 'fail')
          return { ttftMs: 60_000, decodeTokensPerSecond: 0.1, text: 'sim: unhealthy by design' };
        return { ttftMs: 50, decodeTokensPerSecond: 20, text: 'sim: healthy' };
      },
    };
  }
}
