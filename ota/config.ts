import type { DownloadPolicy } from '../lib/download/downloader.js';
import type { JsonSchema } from '../lib/schema.js';
import type { HealthPolicy } from './jobs/health-gate.js';

// The `ota` section: whose signatures the device trusts, and the limits of downloads and the health gate.
// Absent keys take the defaults below (resolveOtaConfig), so a file only states what differs.

export interface OtaTrustedKey {
  /** base64 of the raw 32-byte ed25519 key (what `mnn-edge ota keygen` prints), or a PEM public key. */
  publicKey: string;
  /** Optional check: the hex sha256 of the raw key. */
  keyId?: string;
  comment?: string;
}

export interface OtaConfig {
  /** Several keys allow rotation: add the new key, sign with both, then drop the old one. */
  trustedKeys: OtaTrustedKey[];
  /** Distinct trusted keys that must sign a targets document. */
  threshold: number;
  /**
   * The signed root document shipped in the image (e.g. /etc/mnn-edge/ota-root.json): trusted on first start;
   * from then on the device's stored root governs and changes only by rotation. Without it, trustedKeys act as
   * an implicit root version 0 (both roles), from which a first rotation can move the fleet onto roots.
   */
  rootFile?: string;
  /** Where packages are downloaded to; default <dataDir>/ota/staging. */
  stagingDir?: string;
  download: DownloadPolicy;
  health: HealthPolicy;
  /** MNN's llm_demo, used as the health probe when the runtime provides none. */
  llmDemo?: string;
}

export const otaDefaults: OtaConfig = {
  trustedKeys: [],
  threshold: 1,
  download: {
    maxBytesPerSecond: 0,
    retries: 8,
    backoffMs: 500,
    maxBackoffMs: 30_000,
    headroomBytes: 64 * 1024 * 1024,
    idleTimeoutMs: 30_000,
    minBytesPerSecond: 1024,
    rateWindowMs: 60_000,
  },
  health: {
    prompt: 'Hello',
    maxNewTokens: 16,
    maxTtftMs: 5000,
    minDecodeRatio: 0.8,
    timeoutMs: 60_000,
    maxAttempts: 3,
  },
};

export const otaSchema: JsonSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    trustedKeys: {
      type: 'array',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['publicKey'],
        properties: {
          publicKey: { type: 'string', minLength: 1 },
          keyId: { type: 'string', pattern: '^[0-9a-f]{64}$' },
          comment: { type: 'string' },
        },
      },
    },
    threshold: { type: 'integer', minimum: 1 },
    rootFile: { type: 'string', minLength: 1 },
    stagingDir: { type: 'string', minLength: 1 },
    download: {
      type: 'object',
      additionalProperties: false,
      properties: {
        maxBytesPerSecond: { type: 'integer', minimum: 0, description: '0 = unlimited' },
        retries: { type: 'integer', minimum: 0 },
        backoffMs: { type: 'integer', minimum: 1 },
        maxBackoffMs: { type: 'integer', minimum: 1 },
        headroomBytes: { type: 'integer', minimum: 0 },
        idleTimeoutMs: { type: 'integer', minimum: 100 },
        minBytesPerSecond: {
          type: 'integer',
          minimum: 0,
          description: 'Slow-retrieval bound: slowest average rate over rateWindowMs; 0 disables it',
        },
        rateWindowMs: { type: 'integer', minimum: 100 },
        ca: { type: 'string' },
      },
    },
    health: {
      type: 'object',
      additionalProperties: false,
      properties: {
        prompt: { type: 'string', minLength: 1 },
        maxNewTokens: { type: 'integer', minimum: 1 },
        maxTtftMs: { type: 'number', exclusiveMinimum: 0 },
        minDecodeRatio: { type: 'number', minimum: 0, maximum: 10 },
        timeoutMs: { type: 'integer', minimum: 100 },
        referenceImage: { type: 'string', minLength: 1 },
        maxAttempts: { type: 'integer', minimum: 1 },
      },
    },
    llmDemo: { type: 'string', minLength: 1 },
  },
};

/** The section as the config file gave it (already schema-checked), with defaults filled in. */
export function resolveOtaConfig(raw: unknown): OtaConfig {
  const r = (raw ?? {}) as Partial<OtaConfig>;
  return {
    ...otaDefaults,
    ...r,
    trustedKeys: r.trustedKeys ?? [],
    download: { ...otaDefaults.download, ...r.download },
    health: { ...otaDefaults.health, ...r.health },
  };
}
