// The acting assistant as the workloads module holds it: one assistant over the built-in tools and whatever other
// sources are set (the MCP client's), the timers and their firing, the board speaker, the counts per tool, and
// the typed chat's and timers' routes. Settings are read from the live voice config on every turn, so a reload
// that changes voice.tools takes effect at the next turn.
import type { Clock } from '../../../lib/clock.js';
import { errorMessage } from '../../../lib/errors.js';
import type { Logger } from '../../../lib/log.js';
import type { Db } from '../../../lib/sqlite/database.js';
import type { ToolsConfig } from '../../config/sections/tools.js';
import type { VisionConfig } from '../../config/sections/vision.js';
import type { VoiceConfig } from '../../config/sections/voice.js';
import type { HttpRouter } from '../../http/router.js';
import type { PublishEvent } from '../../module.js';
import type { SlotName } from '../../plan/types.js';
import { WorkloadError } from '../shared/errors.js';
import type { SlotGate } from '../slots/scheduler.js';
import type { WorkloadModels } from '../slots/slot-models.js';
import type { RgbFrame } from '../vision/image.js';
import type { VisionService } from '../vision/service.js';
import { ActingAssistant } from './assistant.js';
import { BoardSpeaker } from './board-speaker.js';
import { BuiltinTools } from './builtin.js';
import { cameraLook } from './camera-look.js';
import { createMcpToolSource } from './mcp/client-source.js';
import { type ChatTarget, registerAssistantRoutes } from './routes.js';
import { type Timer, TimerService } from './timers.js';
import { ToolCallStats } from './tool-stats.js';
import type { ToolSource } from './types.js';

export interface AssistantHubDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** The live voice config (its `tools` is replaced on reload). */
  voice: VoiceConfig;
  visionConfig: VisionConfig;
  vision: VisionService;
  models: WorkloadModels;
  gateFor: (slot: SlotName) => SlotGate;
  publishEvent?: PublishEvent;
}

/** The slots a typed chat may use, in order of preference: the voice LLM first, as the voice loop answers. */
const CHAT_SLOTS: readonly SlotName[] = ['voice.llm', 'voice.omni', 'vision.vlm'];

/** What the board says when a timer is done. */
export function timerDoneSentence(timer: Timer, late: boolean): string {
  const what = timer.label === 'timer' ? 'Your timer' : `Your ${timer.label} timer`;
  return late ? `${what} finished while I was restarting.` : `${what} is done.`;
}

export class AssistantHub {
  readonly assistant: ActingAssistant;
  readonly timers: TimerService;
  readonly speaker: BoardSpeaker;
  readonly stats = new ToolCallStats();
  readonly builtin: BuiltinTools;
  readonly #d: AssistantHubDeps;
  #extra: readonly ToolSource[] = [];

  constructor(deps: AssistantHubDeps) {
    this.#d = deps;
    const log = deps.logger.child('assistant');
    this.speaker = new BoardSpeaker((message) => log.warn('board speaker', { error: message }));
    this.timers = new TimerService(deps.db, {
      now: () => deps.clock.nowMs(),
      maxTimers: () => this.settings().maxTimers,
      onFire: (timer, late) => {
        const spoken = this.speaker.say(timerDoneSentence(timer, late));
        log.info('timer done', { id: timer.id, label: timer.label, late, spoken });
        deps.publishEvent?.('assistant.timer', {
          id: timer.id,
          label: timer.label,
          late,
          dueAt: timer.dueAt,
        });
      },
    });
    this.builtin = new BuiltinTools({
      settings: () => this.settings(),
      now: () => deps.clock.nowMs(),
      timers: this.timers,
      camera: cameraLook(deps.vision, deps.visionConfig, deps.models, () => deps.clock.monotonicMs()),
      speaker: this.speaker,
    });
    this.assistant = new ActingAssistant({
      sources: () => [this.builtin, ...this.#extra],
      settings: () => {
        const s = this.settings();
        return { enabled: s.enabled, allowRemoteActs: s.allowRemoteActs, limits: s.limits };
      },
      onCall: (record) => {
        this.stats.record(record);
        log.info('tool call', {
          tool: record.name,
          source: record.source,
          arguments: record.arguments,
          outcome: record.outcome,
          ms: Math.round(record.ms),
          result: record.content.slice(0, 200),
        });
      },
    });
  }

  settings(): ToolsConfig {
    return this.#d.voice.tools;
  }

  /** The sources beside the built-ins (the MCP client's, one per configured server); used from the next turn. */
  setSources(sources: readonly ToolSource[]): void {
    this.#extra = [...sources];
  }

  /** Starts the timers and one MCP client per `voice.tools.mcp` entry (a server that is down is retried). */
  start(): void {
    this.timers.start();
    const { mcp, limits } = this.settings();
    const log = this.#d.logger.child('mcp');
    const sources: ToolSource[] = [];
    for (const server of mcp) {
      try {
        sources.push(
          createMcpToolSource(
            server,
            { callTimeoutMs: limits.callTimeoutMs, maxResultChars: limits.maxResultBytes },
            { logger: log.child(server.name) },
          ),
        );
      } catch (err) {
        // A bad entry (no name, not an http URL) is named once; the other servers and the built-ins go on.
        log.warn('MCP server left out', { server: server.name, error: errorMessage(err) });
      }
    }
    this.setSources(sources);
  }

  async stop(): Promise<void> {
    this.timers.stop();
    await Promise.allSettled(this.#extra.map((s) => s.close?.()));
  }

  /** The model a typed chat goes to: the first placed chat slot, one that sees images when asked with them. */
  chatTarget(vision: boolean): ChatTarget {
    const { models, gateFor } = this.#d;
    const reasons: string[] = [];
    for (const slot of CHAT_SLOTS) {
      const missing = models.missing(slot);
      if (missing) {
        reasons.push(missing);
        continue;
      }
      const model = models.chat(slot);
      if (vision && !model.capabilities.vision) {
        reasons.push(`${slot}: ${model.id} does not see images`);
        continue;
      }
      return { model, acquire: (signal) => gateFor(slot).acquire(signal) };
    }
    throw new WorkloadError(
      'ENOMODEL',
      `No model can answer${vision ? ' with images' : ''}: ${reasons.join('; ')}`,
    );
  }

  registerRoutes(
    router: HttpRouter,
    images: { maxBytes: number; decode: (bytes: Uint8Array) => Promise<RgbFrame> },
  ): () => void {
    return registerAssistantRoutes({
      router,
      assistant: this.assistant,
      timers: this.timers,
      target: (vision) => this.chatTarget(vision),
      systemPrompt: () => this.#d.voice.systemPrompt,
      maxNewTokens: () => this.#d.voice.maxNewTokens,
      maxImageBytes: images.maxBytes,
      decodeImage: images.decode,
      logger: this.#d.logger.child('assistant'),
    });
  }
}
