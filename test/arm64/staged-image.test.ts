// The image's binaries are the board's: the tree the Yocto recipe installs (npm run stage) for an aarch64 machine
// such as qemuarm64, staged with the cross-built engine addon, better-sqlite3 and libMNN, holds only aarch64 ELF
// files. Run on this machine's Node by the arm64 tier (npm run test:arm64), which passes the cross-built files.
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { stage } from '../../scripts/stage.js';
import { skipWithLine } from '../helpers/skip.js';

const engineAddon = process.env['MNN_EDGE_ARM64_ENGINE_ADDON'];
const sqliteAddon = process.env['MNN_EDGE_ARM64_SQLITE_ADDON'];
const prefix = process.env['MNN_ROOT_AARCH64'];

if (engineAddon === undefined || sqliteAddon === undefined || prefix === undefined) {
  skipWithLine(
    'SKIP staged aarch64 image tree: MNN_EDGE_ARM64_ENGINE_ADDON, MNN_EDGE_ARM64_SQLITE_ADDON and MNN_ROOT_AARCH64 come from npm run test:arm64',
  );
} else {
  test('the staged tree for an aarch64 machine holds only aarch64 ELF files: the addon, better-sqlite3, libMNN', (t) => {
    const destdir = mkdtempSync(join(tmpdir(), 'mnn-edge-stage-aarch64-'));
    t.teardown(() => rmSync(destdir, { recursive: true, force: true }));
    const lines: string[] = [];
    const result = stage({
      destdir,
      build: true,
      arch: 'aarch64',
      natives: {
        // Every addon of better-sqlite3's cross build (better_sqlite3.node and its test_extension.node), as the
        // recipe's build for the target makes them all.
        ...Object.fromEntries(
          readdirSync(dirname(sqliteAddon))
            .filter((f) => f.endsWith('.node'))
            .map((f) => [`node_modules/better-sqlite3/build/Release/${f}`, join(dirname(sqliteAddon), f)]),
        ),
        'engine/build/Release/mnn_edge_engine.node': engineAddon,
      },
      mnnPrefix: prefix,
      log: (l) => lines.push(l),
    });
    const app = 'usr/lib/node_modules/mnn-edge';
    const paths = result.elfFiles.map((f) => f.path);
    for (const want of [
      `${app}/engine/build/Release/mnn_edge_engine.node`,
      `${app}/node_modules/better-sqlite3/build/Release/better_sqlite3.node`,
      'usr/lib/libMNN.so',
    ])
      t.true(paths.includes(want), `${want} in ${paths.join(', ')}`);
    t.true(
      result.elfFiles.every((f) => f.machine === 'aarch64'),
      result.elfFiles.map((f) => `${f.path} ${f.machine}`).join('\n'),
    );
    t.log(lines.filter((l) => l.startsWith('ELF') || l.startsWith('staged')).join('\n'));
  });
}
