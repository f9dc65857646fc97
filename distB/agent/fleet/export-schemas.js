// `npx tsx agent/fleet/export-schemas.ts [dir]`: writes the protocol's JSON schemas (default
// docs/schemas/protocol), so the published documents are generated from the code that validates messages.
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { exportProtocolSchemas } from './protocol.js';
export function writeProtocolSchemas(dir) {
    mkdirSync(dir, { recursive: true });
    const written = [];
    for (const [name, text] of Object.entries(exportProtocolSchemas())) {
        writeFileSync(join(dir, name), text);
        written.push(join(dir, name));
    }
    return written;
}
if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
    const dir = process.argv[2] ??
        resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'docs', 'schemas', 'protocol');
    for (const f of writeProtocolSchemas(dir))
        console.log(f);
}
//# sourceMappingURL=export-schemas.js.map