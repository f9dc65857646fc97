import { createHash } from 'node:crypto';
import { closeSync, createReadStream, existsSync, mkdirSync, openSync, readFileSync, rmSync, statSync, } from 'node:fs';
import { dirname, join } from 'node:path';
import { writeFileDurable } from '../../agent/common/durable-fs.js';
import { MnnEdgeError } from '../../agent/common/errors.js';
import { freeBytesIn } from '../../ota/download.js';
import { OtaRejection } from '../../ota/rejection.js';
import { deriveManifest } from '../manifest/derive.js';
import { compareSemver } from '../manifest/schema.js';
import { MANIFEST_FILE, } from '../manifest/types.js';
import { checkListing, describeExport, requireMnnExport } from './export-check.js';
import { repoName } from './types.js';
export function provenanceOf(pkg) {
    return pkg.manifest.provenance;
}
/** An installed package pulled from this repository at this commit, if any. */
export function installedFromHub(store, hub, repo, commit) {
    return store.list().filter((p) => {
        const prov = p.manifest.provenance;
        return (prov !== undefined &&
            prov.hub === hub &&
            prov.repo === repo &&
            (commit === undefined || prov.commit === commit));
    });
}
function idFor(ref) {
    const id = ref.name
        .toLowerCase()
        .replace(/[^a-z0-9._-]+/g, '-')
        .replace(/^[^a-z0-9]+/, '')
        .slice(0, 64);
    if (!/^[a-z0-9][a-z0-9._-]{0,63}$/.test(id))
        throw new MnnEdgeError('EUSAGE', `Cannot make a model id from ${JSON.stringify(ref.name)}; pass --id`);
    return id;
}
/** The next version of `id`: its newest installed version with the patch number raised, or 1.0.0. */
function nextVersion(store, id) {
    const versions = store
        .list()
        .filter((p) => p.id === id)
        .map((p) => p.version)
        .sort(compareSemver);
    const newest = versions.at(-1);
    if (newest === undefined)
        return '1.0.0';
    const [major, minor, patch] = newest.replace(/-.*$/, '').split('.').map(Number);
    return `${major}.${minor}.${(patch ?? 0) + 1}`;
}
async function gitBlobSha1(path, size) {
    const h = createHash('sha1');
    h.update(`blob ${size}\0`);
    for await (const chunk of createReadStream(path))
        h.update(chunk);
    return h.digest('hex');
}
function presentBytes(dest) {
    for (const p of [dest, `${dest}.part`]) {
        try {
            return statSync(p).size;
        }
        catch {
            // not there
        }
    }
    return 0;
}
export function workDirFor(workRoot, snapshot) {
    const { hub, owner, name } = snapshot.ref;
    return join(workRoot, `${hub}-${owner}-${name}-${snapshot.commit.slice(0, 16)}`);
}
export async function pullFromHub(ref, deps, options = {}) {
    const { client, store, signal } = { ...deps, signal: options.signal };
    const report = options.onProgress ?? (() => { });
    report({ phase: 'listing', fileIndex: 0, fileCount: 0, done: 0, total: 0 });
    const snapshot = await client.snapshot(ref, signal);
    const { files, skipped } = checkListing(snapshot);
    requireMnnExport(snapshot, files);
    const repo = repoName(ref);
    const total = files.reduce((a, f) => a + f.size, 0);
    const same = installedFromHub(store, client.hub, repo, snapshot.commit)[0];
    if (same) {
        report({ phase: 'done', fileIndex: files.length, fileCount: files.length, done: total, total });
        return {
            status: 'unchanged',
            ref: { id: same.id, version: same.version },
            repo,
            commit: snapshot.commit,
            totalBytes: total,
            fetchedBytes: 0,
            skipped,
            provenance: same.manifest.provenance,
        };
    }
    const id = options.id ?? idFor(ref);
    const other = store.list().find((p) => p.id === id && p.manifest.provenance?.repo !== repo);
    if (other)
        throw new MnnEdgeError('EEXIST', `Model id ${id} is already used by ${other.manifest.provenance ? `${other.manifest.provenance.repo} from ${other.manifest.provenance.hub}` : 'a package installed otherwise'}; pass --id to name this one`);
    const version = options.version ?? nextVersion(store, id);
    mkdirSync(deps.workRoot, { recursive: true });
    const work = workDirFor(deps.workRoot, snapshot);
    mkdirSync(work, { recursive: true });
    // Refused before the first byte: what is still to fetch (the files move into the store, no second copy).
    const missing = files.reduce((a, f) => a + Math.max(0, f.size - presentBytes(join(work, f.path))), 0);
    const needed = missing + deps.headroomBytes;
    const free = (deps.freeBytes ?? freeBytesIn)(deps.workRoot);
    if (free < needed)
        throw new MnnEdgeError('ENOSPC', `Not enough disk space for ${repo}: ${needed} bytes needed (${missing} to download, ${deps.headroomBytes} headroom), ${free} free in ${deps.workRoot}`, { required: needed, free });
    const provFiles = [];
    let before = 0;
    let fetched = 0;
    let index = 0;
    let current;
    const onProgress = (p) => report({
        phase: 'downloading',
        file: current?.path,
        fileIndex: index,
        fileCount: files.length,
        done: before + p.done,
        total,
    });
    deps.downloader.on('progress', onProgress);
    try {
        for (const file of files) {
            current = file;
            index++;
            const dest = join(work, file.path);
            mkdirSync(dirname(dest), { recursive: true });
            let sha256;
            let check;
            if (file.size === 0) {
                closeSync(openSync(dest, 'w'));
                sha256 = createHash('sha256').digest('hex');
                check =
                    file.sha256 !== undefined ? 'hub-sha256' : file.gitOid !== undefined ? 'git-blob-sha1' : 'computed';
                if (file.sha256 !== undefined && file.sha256 !== sha256)
                    throw mismatch(file.path, file.sha256, sha256);
            }
            else {
                const resolved = await client.resolveDownload(snapshot, file, signal);
                if (resolved.size !== undefined && resolved.size !== file.size)
                    throw new MnnEdgeError('EVERIFY', `${file.path} is ${resolved.size} bytes at the download URL but listed as ${file.size}; nothing installed`, { entry: file.path });
                const expected = file.sha256 ?? resolved.sha256;
                const had = presentBytes(dest);
                let result;
                try {
                    result = await deps.downloader.fetch({
                        url: resolved.url,
                        dest,
                        length: file.size,
                        ...(expected !== undefined ? { sha256: expected } : {}),
                        headers: resolved.headers,
                    }, signal ? { signal } : {});
                }
                catch (err) {
                    if (err instanceof OtaRejection && err.reason === 'hash-mismatch')
                        throw mismatch(file.path, expected, String(err.details?.actual ?? '?'));
                    if (err instanceof OtaRejection)
                        throw new MnnEdgeError('EVERIFY', `${file.path}: ${err.message}; nothing installed`, {
                            entry: file.path,
                        });
                    throw err;
                }
                fetched += result.bytes - Math.min(had, result.resumedFrom);
                sha256 = result.sha256;
                check = expected !== undefined ? 'hub-sha256' : 'computed';
                if (expected === undefined && file.gitOid !== undefined) {
                    const oid = await gitBlobSha1(dest, file.size);
                    if (oid !== file.gitOid) {
                        rmSync(dest, { force: true });
                        throw new MnnEdgeError('EVERIFY', `${file.path} does not match the hub's git blob id (${oid} instead of ${file.gitOid}); nothing installed`, { entry: file.path });
                    }
                    check = 'git-blob-sha1';
                }
            }
            provFiles.push({
                path: file.path,
                sha256,
                check,
                ...(file.gitOid !== undefined ? { gitOid: file.gitOid } : {}),
            });
            before += file.size;
            report({
                phase: 'downloading',
                file: file.path,
                fileIndex: index,
                fileCount: files.length,
                done: before,
                total,
            });
        }
    }
    catch (err) {
        // Bytes that contradict the hub's own hashes: start clean next time. A cut keeps what arrived, for resume.
        if (err instanceof MnnEdgeError && err.code === 'EVERIFY')
            rmSync(work, { recursive: true, force: true });
        throw err;
    }
    finally {
        deps.downloader.off('progress', onProgress);
    }
    report({ phase: 'installing', fileIndex: files.length, fileCount: files.length, done: total, total });
    const [configJson, llmConfigJson] = [join(work, 'config.json'), join(work, 'llm_config.json')].map((p) => existsSync(p) ? readBuffer(p) : undefined);
    const described = describeExport(repo, files, configJson, llmConfigJson);
    const provenance = {
        hub: client.hub,
        repo,
        revision: snapshot.revision,
        commit: snapshot.commit,
        endpoint: client.endpoint,
        pulledAt: (deps.now?.() ?? new Date()).toISOString(),
        trust: 'unsigned-tofu',
        files: provFiles,
    };
    const derived = deriveManifest(work, provFiles.map((f) => ({
        path: f.path,
        length: files.find((x) => x.path === f.path).size,
        sha256: f.sha256,
    })), { id, version, ...(described.task !== undefined ? { task: described.task } : {}) });
    const manifest = {
        ...derived,
        source: { url: client.webUrl({ ...ref, revision: snapshot.commit }), upstream: repo },
        provenance,
    };
    manifest.derived?.assumptions.push(`pulled from ${client.hub} ${repo}@${snapshot.commit}: unsigned, trusted on first use`);
    writeFileDurable(join(work, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
    // The download directory is ours: its files move into the store instead of being copied a second time.
    const pkg = await store.import(work, {
        consumeSource: { sha256: new Map(provFiles.map((f) => [f.path, f.sha256])) },
        ...(signal ? { signal } : {}),
    });
    rmSync(work, { recursive: true, force: true });
    report({ phase: 'done', fileIndex: files.length, fileCount: files.length, done: total, total });
    return {
        status: 'installed',
        ref: { id: pkg.id, version: pkg.version },
        repo,
        commit: snapshot.commit,
        totalBytes: total,
        fetchedBytes: fetched,
        skipped,
        provenance,
    };
}
function readBuffer(path) {
    try {
        return statSync(path).size <= 4 * 1024 * 1024 ? readFileSync(path) : undefined;
    }
    catch {
        return undefined;
    }
}
function mismatch(path, expected, actual) {
    return new MnnEdgeError('EVERIFY', `${path} has sha256 ${actual}, but the hub lists ${expected}; nothing installed`, { entry: path, expected, actual });
}
//# sourceMappingURL=pull.js.map