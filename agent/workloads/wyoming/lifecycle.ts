// The Wyoming server over the workloads module's life: started with the module, started again when a settings
// change touches what it was started from, announced over mDNS while it listens and `wyoming.mdns` says so. The
// workloads module (module.ts) holds one and asks it; start.ts starts each server.
import { MnnEdgeError } from '../../../lib/errors.js';
import type { AgentConfig } from '../../config/schema.js';
import type { VoiceConfig } from '../../config/sections/voice.js';
import type { AgentContext } from '../../module.js';
import type { WyomingServer, WyomingStats } from './server.js';
import { resolveWyomingConfig, startWyoming, type WyomingStart, wyomingAnnounced } from './start.js';

export interface WyomingLifecycleDeps extends Omit<WyomingStart, 'voiceConfig'> {
  /** The voice section as the workloads read it (defaults merged): the server takes its prompt and history. */
  voiceConfigOf(config: AgentConfig): VoiceConfig;
}

export class WyomingLifecycle {
  readonly #d: WyomingLifecycleDeps;
  #server: WyomingServer | undefined;
  #announce = false;
  /** wyomingKey() of the configuration the server was last started from. */
  #from = '';

  constructor(deps: WyomingLifecycleDeps) {
    this.#d = deps;
  }

  /** The port while the server listens. */
  get port(): number | undefined {
    return this.#server?.port;
  }

  stats(): WyomingStats | undefined {
    return this.#server?.stats();
  }

  announcement(): { port: number } | undefined {
    const port = this.#server?.port;
    return this.#announce && port !== undefined ? { port } : undefined;
  }

  /** Closes the running server (if any) and starts one from `config` (none when it leaves Wyoming off). */
  async restart(config: AgentConfig): Promise<void> {
    await this.#server?.close();
    const at: AgentContext = { ...this.#d.ctx, config };
    this.#server = await startWyoming({ ...this.#d, ctx: at, voiceConfig: this.#d.voiceConfigOf(config) });
    this.#from = this.#key(config);
    this.#announce = this.#server !== undefined && wyomingAnnounced(at);
  }

  /** A settings change: the server restarts when it touches what the server was started from. */
  async apply(config: AgentConfig): Promise<number | 'off' | 'unchanged'> {
    if (this.#key(config) === this.#from) return 'unchanged';
    await this.restart(config);
    // A change that turns Wyoming on (or moves it) fails whole when the server cannot listen.
    const w = resolveWyomingConfig(config['wyoming']);
    if (w.enabled && this.#server === undefined)
      throw new MnnEdgeError(
        'EWYOMING',
        `The Wyoming server cannot listen on ${w.bind}:${w.port} (the port is in use or not allowed)`,
      );
    return this.#server?.port ?? 'off';
  }

  async close(): Promise<void> {
    await this.#server?.close();
    this.#server = undefined;
  }

  /** What the server is started from: a change to any of it restarts the server. */
  #key(config: AgentConfig): string {
    const v = this.#d.voiceConfigOf(config);
    return JSON.stringify([config['wyoming'] ?? {}, v.systemPrompt, v.maxHistoryMessages]);
  }
}
