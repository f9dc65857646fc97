// The model on slot voice.wake, as the wake streams use it: its keywords (the package's heads, with the trigger
// defaults its wake.json gives) and one pipeline step per 80 ms frame through the runtime. The keyword list is
// read from the installed package, once per model version.
import { readdirSync } from 'node:fs';
import { defaultTriggerRule } from '../../../engine/index.js';
import { errorMessage } from '../../../lib/errors.js';
import { readWakePackage, type WakeKeywordMeta } from '../../../models/wake-package.js';
import type { WakeKeywordConfig } from '../../config/sections/voice.js';
import type { TensorIn, TensorOut } from '../../runtime/engine/engine-port.js';
import type { Runtime } from '../../runtime/runtime.js';
import type { SlotServing } from '../../runtime/serving/serving.js';
import { WorkloadError } from '../shared/errors.js';
import type { KeywordSetting, WakeTensorModel } from './stream.js';

export interface WakeModelInfo {
  modelId: string;
  version: string;
  keywords: WakeKeywordMeta[];
  languages: string[];
}

/** The part of the runtime the wake model's description needs. */
export type WakeRuntime = Pick<Runtime, 'engineUnavailableReason' | 'slotInfo'>;

/** Where an installed package's files are (the model store's directory for it). */
export type PackageDirOf = (ref: { id: string; version: string }) => string | undefined;

/** How long one frame may wait for the wake host (a restart or swap in progress) before it counts as failed. */
export const WAKE_FRAME_BUDGET_MS = 500;

const cache = new Map<string, WakeModelInfo>();

/** The wake model now on voice.wake, or a WorkloadError saying why there is none. */
export function wakeModelInfo(rt: WakeRuntime, packageDir: PackageDirOf): WakeModelInfo {
  if (rt.engineUnavailableReason) throw new WorkloadError('ENOENGINE', rt.engineUnavailableReason);
  const info = rt.slotInfo('voice.wake');
  if (info.status !== 'placed' && info.status !== 'degraded')
    throw new WorkloadError(
      'ENOMODEL',
      info.status === 'unloaded'
        ? `Slot voice.wake has no model loaded: ${info.reasons.join('; ') || 'the placement left it out'}`
        : 'No model placed on slot voice.wake: install the shipped wake word (mnn-edge models pull wake; on a board with a microphone it is then the default) or another wake-word package (mnn-edge models import <dir>) and set slots.voice.wake',
    );
  const key = `${info.modelId}@${info.version}`;
  const known = cache.get(key);
  if (known) return known;
  const dir = packageDir({ id: info.modelId, version: info.version });
  if (!dir) throw new WorkloadError('ENOMODEL', `The package of ${key} on voice.wake is not installed`);
  try {
    const layout = readWakePackage(dir, readdirSync(dir));
    const out: WakeModelInfo = {
      modelId: info.modelId,
      version: info.version,
      keywords: layout.heads.map(({ name, phrase, threshold, triggerFrames, refractoryMs }) => ({
        name,
        ...(phrase !== undefined ? { phrase } : {}),
        ...(threshold !== undefined ? { threshold } : {}),
        ...(triggerFrames !== undefined ? { triggerFrames } : {}),
        ...(refractoryMs !== undefined ? { refractoryMs } : {}),
      })),
      languages: layout.languages,
    };
    cache.set(key, out);
    return out;
  } catch (err) {
    throw new WorkloadError('ENOMODEL', `The wake package ${key} cannot be read: ${errorMessage(err)}`);
  }
}

/** The pipeline step through the runtime's serving (the slot's engine host). */
export function wakeTensorModel(serving: Pick<SlotServing, 'forward'>): WakeTensorModel {
  return {
    forward: (inputs: TensorIn[]): Promise<TensorOut[]> =>
      serving.forward('voice.wake', inputs, AbortSignal.timeout(WAKE_FRAME_BUDGET_MS)),
  };
}

export interface ResolvedKeyword extends KeywordSetting {
  phrase?: string;
  /** false: scored and charted, never wakes the board. */
  enabled: boolean;
}

/** Each head's trigger rule: the configuration's override, else the package's default, else the built-in. */
export function keywordSettings(
  keywords: readonly WakeKeywordMeta[],
  config: Readonly<Record<string, WakeKeywordConfig>>,
): ResolvedKeyword[] {
  return keywords.map((k, index) => {
    const c = config[k.name] ?? {};
    return {
      name: k.name,
      index,
      ...(k.phrase !== undefined ? { phrase: k.phrase } : {}),
      threshold: c.threshold ?? k.threshold ?? defaultTriggerRule.threshold,
      triggerFrames: c.triggerFrames ?? k.triggerFrames ?? defaultTriggerRule.triggerFrames,
      refractoryMs: c.refractoryMs ?? k.refractoryMs ?? defaultTriggerRule.refractoryMs,
      enabled: c.enabled ?? true,
    };
  });
}
