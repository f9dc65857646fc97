// Composition of the device side from configuration: trust store, journal, downloader, runner, and the ports
// (runtime's when given, else the model store's with llm_demo as the probe). `createOtaModule` packages it
// as an AgentModule for agent/main.ts.
import { arch as hostArch } from 'node:os';
import { join } from 'node:path';
import { MnnEdgeError } from '../agent/common/errors.js';
import { resolveOtaConfig } from '../agent/config/sections/ota.js';
import { Downloader } from './download.js';
import { JobRunner } from './job-runner.js';
import { JobJournal } from './journal.js';
import { LlmDemoProbe } from './llm-demo-probe.js';
import { attachOtaToMqtt } from './mqtt-device.js';
import { RootStore } from './root-store.js';
import { ModelStoreInstaller, StoreActivation } from './store-adapter.js';
import { TrustStore, trustPolicyFromConfig } from './trust.js';
export function stagingDirOf(config, dataDir) {
    return config.stagingDir ?? join(dataDir, 'ota', 'staging');
}
/** The device's root of trust: the stored root, the image's root (ota.rootFile), or ota.trustedKeys as root 0. */
export function rootStoreFor(db, config, time, logger) {
    const legacy = trustPolicyFromConfig(config.trustedKeys, config.threshold);
    return new RootStore(db, {
        legacyKeys: legacy.keys,
        legacyThreshold: legacy.threshold,
        ...(config.rootFile !== undefined ? { shippedRoot: config.rootFile } : {}),
        time,
        ...(logger ? { logger } : {}),
    });
}
export function createOtaDevice(o) {
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
const noProbe = {
    async measure() {
        throw new MnnEdgeError('EPROBE', 'No health probe available: run the agent with the runtime, or set ota.llmDemo to MNN llm_demo');
    },
};
/** Ports over the model store, for when the runtime does not provide activation and probing. */
export function storePorts(store, kv, config) {
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
export function createOtaModule(options) {
    let device;
    let link;
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
                link = attachOtaToMqtt(transport, device.runner, { deviceId: ctx.identity.deviceId, tags: ctx.identity.tags }, ctx.logger.child('ota'), { store: device.roots, now: () => ctx.time.trustedNow() });
            }
            else {
                ctx.logger.warn('ota: the fleet is off; jobs resume from the journal but new ones cannot arrive');
            }
        },
        async stop() {
            await link?.detach();
            await device?.runner.stop();
        },
    };
}
//# sourceMappingURL=device.js.map