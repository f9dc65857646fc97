// Ollama names models `name:tag`; what /api/tags lists is what clients send back. The board serves one version
// of each model, listed as `<id>:latest`; a request may name it with that tag, with the version placed as its
// tag (`tiny-llm:1.0.0`) or with no tag at all.

export const DEFAULT_TAG = 'latest';

export function ollamaName(id: string): string {
  return `${id}:${DEFAULT_TAG}`;
}

/** The entry a client's model name means, or undefined. */
export function findByName<T extends { id: string; version?: string | undefined }>(
  name: string,
  entries: readonly T[],
): T | undefined {
  const colon = name.lastIndexOf(':');
  // A colon inside a registry host (`host:port/model`) is not a tag separator.
  const tagged = colon > 0 && !name.slice(colon + 1).includes('/');
  const base = tagged ? name.slice(0, colon) : name;
  const tag = tagged ? name.slice(colon + 1) : DEFAULT_TAG;
  return entries.find((e) => e.id === base && (tag === DEFAULT_TAG || tag === e.version));
}
