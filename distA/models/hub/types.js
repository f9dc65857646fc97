export function repoName(ref) {
    return `${ref.owner}/${ref.name}`;
}
/** A git commit id (and git blob id) as the hubs write them. */
export const HEX40 = /^[0-9a-f]{40}$/;
/** A sha256 digest in lowercase hex. */
export const HEX64 = /^[0-9a-f]{64}$/;
//# sourceMappingURL=types.js.map