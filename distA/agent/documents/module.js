/** One package in the retained `models` document. */
export function packageEntry(p) {
    const prov = p.manifest.provenance;
    return {
        id: p.id,
        version: p.version,
        task: p.task,
        sizeBytes: p.sizeBytes,
        derived: p.derived,
        inUse: p.inUse,
        kept: p.kept,
        rollbackHold: p.rollbackHold,
        lastUsedAt: p.lastUsedAt,
        // Hub pulls carry no signature: operators see where one came from and that it is trusted on first use.
        ...(prov
            ? { trust: prov.trust, pulledFrom: { hub: prov.hub, repo: prov.repo, commit: prov.commit } }
            : {}),
    };
}
export function createDocumentsModule(sources) {
    const publishPlacement = () => {
        const placement = sources.placement();
        if (placement)
            sources
                .fleet()
                ?.setDocument('placement', { ...placement, slotStates: [...(sources.slotStates?.() ?? [])] });
    };
    const publishModels = () => {
        const store = sources.store();
        if (!store)
            return;
        const installed = store.list();
        const summary = installed
            .map((p) => `${p.id}@${p.version}`)
            .sort()
            .join(', ');
        sources.fleet()?.setDocument('models', {
            // Home Assistant's update entity compares these two strings; a pending OTA job is reported on ota/status.
            installedVersion: summary,
            latestVersion: summary,
            packages: installed.map(packageEntry),
        });
    };
    const publishCapabilities = () => {
        const caps = sources.capabilities();
        if (!caps)
            return;
        const engine = sources.engine();
        sources.fleet()?.setDocument('capabilities', {
            ...caps,
            agentVersion: sources.agentVersion,
            engine: engine?.available
                ? { available: true, mnnVersion: engine.info.mnnVersion }
                : { available: false, reason: engine?.reason ?? 'not probed yet' },
        });
    };
    const publishAll = () => {
        publishCapabilities();
        publishModels();
        publishPlacement();
    };
    let watched;
    return {
        name: 'documents',
        publishCapabilities,
        publishModels,
        publishPlacement,
        publishAll,
        start() {
            publishAll();
            watched = sources.store();
            watched?.on('installed', publishModels);
            watched?.on('removed', publishModels);
        },
        stop() {
            watched?.off('installed', publishModels);
            watched?.off('removed', publishModels);
            watched = undefined;
        },
    };
}
//# sourceMappingURL=module.js.map