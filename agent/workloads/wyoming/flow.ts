// What every flow of a Wyoming connection (transcribe.ts, detect.ts, synthesize.ts, handle.ts) is given by the
// connection that runs it (connection.ts): its dependencies and its one job queue. The flows live in files of
// their own, so the type they share sits here rather than in connection.ts, which imports them.
import type { Logger } from '../../../lib/log.js';
import type { VoiceService } from '../voice/service.js';
import type { WyomingEvent } from './codec.js';
import type { ConversationHistories } from './conversations.js';
import type { SessionSource } from './session-claim.js';

export interface WyomingConnectionDeps {
  voice: Pick<VoiceService, 'roles' | 'asrStage' | 'replyStage' | 'ttsStage' | 'wakeStream'>;
  conversations: ConversationHistories;
  systemPrompt: string;
  languages: readonly string[];
  agentVersion: string;
  maxTextChars: number;
  maxAudioSeconds: number;
  asr: { instruction: string; maxNewTokens: number };
  /** A voice turn is running: vision's watch mode yields the SoC (the dashboard sessions' priority). */
  priority?: { begin(): void; end(): void };
  /** Writes one event; resolves when the socket can take more (so audio out is paced by the client). */
  send(event: WyomingEvent): Promise<void>;
  /** The agent's shared live sessions (session-claim.ts); undefined: no limit. */
  sessions?: SessionSource;
  /** All slots were taken: says so with an `error` event (code, retry hint) and closes the connection. */
  refuse?(code: string, text: string): void;
  logger: Logger;
}

/** The connection, as a flow sees it. */
export interface FlowHost {
  readonly deps: WyomingConnectionDeps;
  /** Runs model work after the connection's earlier jobs, so answers keep the order of the requests. */
  enqueue(job: (signal: AbortSignal) => Promise<void>): void;
  /** Answers with an `error` event; the connection stays. */
  error(err: unknown): Promise<void>;
  /** A flow stopped waiting outside an event (a wake stream answered): the live session may go back. */
  settled(): void;
}
