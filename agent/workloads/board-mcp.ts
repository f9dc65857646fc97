// The board's MCP server (POST /mcp) over the workloads' own services: the camera tools ask the vision slot
// about a frame taken now, announce speaks through a voice session of its own into the board's speaker, and
// the status tool reads what compose hands the module. Announce is off for remote clients unless enabled.
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import type { VisionConfig } from '../config/sections/vision.js';
import type { VoiceConfig } from '../config/sections/voice.js';
import type { AgentContext } from '../module.js';
import { AplaySink, type AudioSink, WavFileSink } from './audio/io.js';
import type { WorkloadModels } from './slots/slot-models.js';
import { createBoardTools } from './tools/board-tools.js';
import { registerMcpServer } from './tools/mcp/server-routes.js';
import type { VisionService } from './vision/service.js';
import { snapshot } from './vision/snapshot.js';
import type { VoiceService } from './voice/service.js';

export interface BoardMcpOptions {
  /** Let MCP clients (other machines) use announce; off by default, as the issue asks of acting tools. */
  announceForRemote?: boolean;
  /** The board's state for `board_status` (compose builds it from the runtime and the detection). */
  status?: () => Promise<Record<string, unknown>> | Record<string, unknown>;
  /** How long a camera may take to give its first frame. */
  cameraTimeoutMs?: number;
}

/** Speaks `text` on the board's speaker (or into `voice-announce.wav` when the output is a WAV file). */
export async function announceOnSpeaker(
  voice: VoiceService,
  vc: VoiceConfig,
  dataDir: string,
  text: string,
  signal: AbortSignal,
): Promise<void> {
  const session = await voice.open(`announce-${randomUUID()}`);
  const sink: AudioSink =
    vc.output.sink === 'alsa'
      ? new AplaySink(vc.output.device)
      : new WavFileSink(join(dataDir, 'voice-announce.wav'));
  const offAudio = session.on('audio', (e) => sink.write(e.samples, e.sampleRate));
  const onAbort = () => void session.close();
  signal.addEventListener('abort', onAbort, { once: true });
  try {
    session.say(text);
    await session.idle();
    if (signal.aborted) throw signal.reason;
  } finally {
    signal.removeEventListener('abort', onAbort);
    offAudio();
    await session.close();
    await sink.close();
  }
}

export function registerBoardMcp(
  ctx: AgentContext,
  config: { voice: VoiceConfig; vision: VisionConfig },
  services: { voice: VoiceService; vision: VisionService; models: WorkloadModels },
  options: BoardMcpOptions & { agentVersion: string },
): () => void {
  const { voice: vc, vision: vic } = config;
  const { voice, vision, models } = services;
  const camera = vic.camera;
  const cameraTimeoutMs = options.cameraTimeoutMs ?? 15_000;
  const tools = createBoardTools({
    ...(camera
      ? {
          frame: (signal: AbortSignal) =>
            snapshot(
              camera,
              { width: vic.frameWidth, height: vic.frameHeight },
              AbortSignal.any([signal, AbortSignal.timeout(cameraTimeoutMs)]),
            ),
        }
      : {}),
    ask: async (frame, question, signal) => {
      const stream = await vision.query({ frame, question, signal });
      // The stream is pulled: its result settles only once the pieces have been read.
      for await (const _piece of stream);
      return (await stream.result).text;
    },
    visionMissing: () =>
      vic.enabled ? models.missing('vision.vlm') : 'Vision is disabled in the configuration (vision.enabled)',
    ...(vc.enabled && vc.output.sink !== 'none'
      ? {
          announce: (text: string, signal: AbortSignal) =>
            announceOnSpeaker(voice, vc, ctx.config.dataDir, text, signal),
        }
      : {}),
    ...(options.status ? { status: options.status } : {}),
  });
  return registerMcpServer({
    router: ctx.router,
    source: tools,
    allowActing: options.announceForRemote === true,
    serverInfo: { name: 'mnn-edge', version: options.agentVersion },
    logger: ctx.logger.child('mcp-server'),
  });
}

/** The board's MCP edge as the workloads module mounts it: announcing only where remote callers may act. */
export function mountBoardMcp(
  ctx: AgentContext,
  config: { voice: VoiceConfig; vision: VisionConfig },
  services: { voice: VoiceService; vision: VisionService; models: WorkloadModels },
  options: BoardMcpOptions | undefined,
  agentVersion: string,
): () => void {
  const tools = config.voice.tools;
  return registerBoardMcp(ctx, config, services, {
    announceForRemote: tools.allowRemoteActs && tools.builtins.announce,
    ...options,
    agentVersion,
  });
}
