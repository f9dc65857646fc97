// The feature models' fetch and MNNConvert moved to models/wake-shipped/feature-models.ts, where the agent's
// `models pull wake` and the packaging assemble the shipped keyword with them; the tools keep importing here.
export * from '../../../models/wake-shipped/feature-models.js';
