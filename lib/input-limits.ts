// The limits every boundary applies to input it did not produce: MQTT payloads, HTTP bodies, signed metadata,
// manifests and files read from disk. One set, so a document that one path refuses is not accepted by another.

export const INPUT_LIMITS = Object.freeze({
  /** Deepest nesting of arrays and objects in any JSON we parse; our own documents need fewer than 10. */
  jsonMaxDepth: 64,
  /** Largest JSON document read from disk or the network unless a boundary has a configured, smaller limit. */
  jsonMaxBytes: 4 * 1024 * 1024,
  /** Signed metadata (targets, root) fetched or read whole. */
  metadataMaxBytes: 1024 * 1024,
  /** A package's manifest (mnn-edge.json). */
  manifestMaxBytes: 1024 * 1024,
  /** Text to be spoken in one request (voice socket `say`, Wyoming `synthesize`): about two minutes of speech. */
  speechTextMaxChars: 2000,
  /** Attacker-controlled text quoted in an error message is cut to this many characters. */
  quotedTextMaxChars: 200,
});

export type InputLimits = typeof INPUT_LIMITS;
