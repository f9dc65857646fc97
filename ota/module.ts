// OTA as one feature: the device side composed from configuration (trust store, journal, downloader, runner,
// and the ports: the runtime's when given, else the model store's with llm_demo as the probe), and
// `createOtaModule`, which packages it as a module for the agent. Its rooms: trust/ (the root of trust, signed
// documents), jobs/ (what runs on the device), tools/ (the operator's). The feature imports lib/ and models/
// only: what it needs of the agent is stated here (OtaContext) and the agent's AgentContext satisfies it.

import { arch as hostArch } from 'node:os';
import { join } from 'node:path';
import { Downloader } from '../lib/download/downloader.js';
import { MnnEdgeError } from '../lib/errors.js';
import type { Logger } from '../lib/log.js';
import type { ActivationPort, HealthProbe } from '../lib/ota-ports.js';
import type { Db, KvStore } from '../lib/sqlite/database.js';
import type { ModelStore } from '../models/index.js';
import { type OtaConfig, resolveOtaConfig } from './config.js';
import { JobRunner } from './jobs/job-runner.js';
import { JobJournal } from './jobs/journal.js';
import { LlmDemoProbe } from './jobs/llm-demo-probe.js';
import { attachOtaToMqtt, type OtaDeviceLink, type OtaTransport } from './jobs/mqtt-device.js';
import type { PackageInstaller } from './jobs/ports.js';
import { ModelStoreInstaller, StoreActivation } from './jobs/store-adapter.js';
import { RootStore } from './trust/root-store.js';
import type { DeviceFacts } from './trust/targets.js';
import type { TimeSource } from './trust/timestamps.js';
import { TrustStore, trustPolicyFromConfig } from './trust/trust.js';

export interface OtaPorts {
  installer: PackageInstaller;
  activation: ActivationPort;
  probe: HealthProbe;
}

export interface OtaDeviceOptions {
  db: Db;
  dataDir: string;
  config: OtaConfig;
  facts: DeviceFacts;
  time: TimeSource;
  logger: Logger;
  ports: OtaPorts;
}

export interface OtaDevice {
  runner: JobRunner;
  trust: TrustStore;
  roots: RootStore;
  journal: JobJournal;
  downloader: Downloader;
}

export function stagingDirOf(config: OtaConfig, dataDir: string): string {
  return config.stagingDir ?? join(dataDir, 'ota', 'staging');
}

/** The device's root of trust: the stored root, the image's root (ota.rootFile), or ota.trustedKeys as root 0. */
export function rootStoreFor(db: Db, config: OtaConfig, time: TimeSource, logger?: Logger): RootStore {
  const legacy = trustPolicyFromConfig(config.trustedKeys, config.threshold);
  return new RootStore(db, {
    legacyKeys: legacy.keys,
    legacyThreshold: legacy.threshold,
    ...(config.rootFile !== undefined ? { shippedRoot: config.rootFile } : {}),
    time,
    ...(logger ? { logger } : {}),
  });
}

export function createOtaDevice(o: OtaDeviceOptions): OtaDevice {
  const roots = rootStoreFor(o.db, o.config, o.time, o.logger);
  const trust = new TrustStore(o.db, roots, o.time);
  const journal = new JobJournal(o.db, () => o.time.trustedNow());
  const downloader = new Downloader(o.config.download);
  const runner = new JobRunner({
    facts: o.facts,
    journal,
    trust,
    downloader,
    ...o.ports,
    stagingDir: stagingDirOf(o.config, o.dataDir),
    health: {
      ...o.config.health,
      ...(o.config.health.referenceImage ? { referenceImage: o.config.health.referenceImage } : {}),
    },
    time: o.time,
    logger: o.logger,
  });
  return { runner, trust, roots, journal, downloader };
}

/** A probe that refuses: with neither the runtime nor llm_demo there is nothing to measure health with. */
const noProbe: HealthProbe = {
  async measure() {
    throw new MnnEdgeError(
      'EPROBE',
      'No health probe available: run the agent with the runtime, or set ota.llmDemo to MNN llm_demo',
    );
  },
};

/** Ports over the model store, for when the runtime does not provide activation and probing. */
export function storePorts(
  store: ModelStore,
  kv: KvStore,
  config: OtaConfig,
): OtaPorts & { activation: StoreActivation } {
  const activation = new StoreActivation(store, kv);
  const probe = config.llmDemo
    ? new LlmDemoProbe({
        binary: config.llmDemo,
        modelDir: (id, version) => store.packageDir({ id, version }),
      })
    : noProbe;
  return {
    installer: new ModelStoreInstaller(store, { headroomBytes: config.download.headroomBytes }),
    activation,
    probe,
  };
}

/** What OTA needs of the agent when it starts; agent/module.ts's AgentContext satisfies it. */
export interface OtaContext {
  config: { dataDir: string; readonly [section: string]: unknown };
  db: Db;
  kv: KvStore;
  identity: { deviceId: string; tags: string[] };
  time: TimeSource;
  logger: Logger;
}

/** The module the agent starts and stops (an AgentModule by shape). */
export interface OtaModule {
  name: 'ota';
  start(ctx: OtaContext): Promise<void>;
  stop(): Promise<void>;
}

export interface OtaModuleOptions {
  /**
   * The fleet's MQTT transport; undefined when the fleet is off (jobs in the journal still resume). It may be
   * offline: jobs arrive once it connects, and start never waits for it.
   */
  transport: () => OtaTransport | undefined;
  /** The model store the agent opened. */
  store: () => ModelStore;
  /** The runtime's ports when it provides them; otherwise the store's ports are used. */
  ports?: (ctx: OtaContext) => OtaPorts | undefined;
}

export function createOtaModule(options: OtaModuleOptions): OtaModule {
  let device: OtaDevice | undefined;
  let link: OtaDeviceLink | undefined;
  return {
    name: 'ota',
    async start(ctx) {
      const config = resolveOtaConfig(ctx.config['ota']);
      const ports = options.ports?.(ctx) ?? storePorts(options.store(), ctx.kv, config);
      device = createOtaDevice({
        db: ctx.db,
        dataDir: ctx.config.dataDir,
        config,
        facts: { deviceId: ctx.identity.deviceId, tags: ctx.identity.tags, arch: hostArch() },
        time: ctx.time,
        logger: ctx.logger.child('ota'),
        ports,
      });
      device.runner.start();
      const transport = options.transport();
      if (transport) {
        link = attachOtaToMqtt(
          transport,
          device.runner,
          { deviceId: ctx.identity.deviceId, tags: ctx.identity.tags },
          ctx.logger.child('ota'),
          { store: device.roots, now: () => ctx.time.trustedNow() },
        );
      } else {
        ctx.logger.warn('ota: the fleet is off; jobs resume from the journal but new ones cannot arrive');
      }
    },
    async stop() {
      await link?.detach();
      await device?.runner.stop();
    },
  };
}
