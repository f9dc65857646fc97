// What travels over MQTT: a job (operator → device) and the device's report of it (device → operators).
// The job carries the whole signed targets document, so a device needs nothing but the broker and the package
// URL; the URL is not trusted (length and sha256 come from the signed document).
import { deviceTopics, FLEET_SEGMENT, TOPIC_PREFIX } from '../agent/fleet/topics.js';
export const JOB_STATES = [
    'queued',
    'downloading',
    'verifying',
    'staged',
    'activating',
    'health-check',
    'succeeded',
    'failed',
    'rolled-back',
    'rejected',
];
export const TERMINAL_STATES = ['succeeded', 'failed', 'rolled-back', 'rejected'];
export function isTerminal(state) {
    return TERMINAL_STATES.includes(state);
}
const JOB_ID = '^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$';
export const otaJobSchema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://mnn-edge.dev/schemas/ota-job.json',
    title: 'mnn-edge OTA job (published to mnn-edge/<device>/ota/jobs or mnn-edge/fleet/ota/tags/<tag>/jobs)',
    type: 'object',
    additionalProperties: false,
    required: ['jobId', 'package', 'targets', 'baseUrl'],
    properties: {
        jobId: { type: 'string', pattern: JOB_ID },
        package: {
            type: 'object',
            additionalProperties: false,
            required: ['id', 'version'],
            properties: {
                id: { type: 'string', minLength: 1, maxLength: 128 },
                version: { type: 'string', minLength: 1, maxLength: 128 },
                variant: { type: 'string', minLength: 1, maxLength: 128 },
            },
        },
        targets: { type: 'object', description: 'The signed targets envelope (ota-signed-targets.json).' },
        baseUrl: { type: 'string', pattern: '^https?://' },
        rolloutId: { type: 'string', pattern: JOB_ID },
    },
};
export const jobStatusSchema = {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    $id: 'https://mnn-edge.dev/schemas/ota-status.json',
    title: 'mnn-edge OTA job status (retained on mnn-edge/<device>/ota/status)',
    type: 'object',
    required: ['jobId', 'deviceId', 'state', 'package', 'ts'],
    properties: {
        jobId: { type: 'string' },
        deviceId: { type: 'string' },
        state: { enum: JOB_STATES },
        package: {
            type: 'object',
            required: ['id', 'version'],
            properties: { id: { type: 'string' }, version: { type: 'string' } },
        },
        rolloutId: { type: 'string' },
        bytesDone: { type: 'integer', minimum: 0 },
        bytesTotal: { type: 'integer', minimum: 0 },
        reason: { type: 'string' },
        message: { type: 'string' },
        previousVersion: { type: 'string' },
        health: { type: 'object' },
        kind: { const: 'root' },
        ts: { type: 'integer' },
    },
};
export const otaTopics = {
    deviceJobs: (deviceId) => deviceTopics(deviceId).ota('jobs'),
    deviceStatus: (deviceId) => deviceTopics(deviceId).ota('status'),
    tagJobs: (tag) => `${TOPIC_PREFIX}/${FLEET_SEGMENT}/ota/tags/${tag}/jobs`,
    /** Root rotations travel apart from jobs: each topic's retained message is then the newest of its kind. */
    deviceRoot: (deviceId) => deviceTopics(deviceId).ota('root'),
    tagRoot: (tag) => `${TOPIC_PREFIX}/${FLEET_SEGMENT}/ota/tags/${tag}/root`,
    allStatus: `${TOPIC_PREFIX}/+/ota/status`,
};
//# sourceMappingURL=job.js.map