import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, type ConsoleMessage, chromium, type Page, type Request } from 'playwright-core';
import { defaultConfig } from '../../agent/config/defaults.js';
import type { AgentConfig } from '../../agent/config/schema.js';
import { planPolicyFromConfig } from '../../agent/config/sections/slots.js';
import {
  brokerStatusFrom,
  engineStatusFrom,
  modelsPortFrom,
  otaPortFrom,
  placementPortFrom,
  SampleHub,
  telemetryPortFrom,
} from '../../agent/dashboard-api/adapters.js';
import { hubPortFrom } from '../../agent/dashboard-api/hub-port.js';
import type { DashboardSources, WorkloadsPort } from '../../agent/dashboard-api/ports.js';
import { createDashboardModule } from '../../agent/dashboard-api/routes.js';
import { detect } from '../../agent/detect/index.js';
import { createFleetModule } from '../../agent/fleet/module.js';
import { createSessionLimiter } from '../../agent/http/session-limits.js';
import { type Agent, type AgentModule, createAgent } from '../../agent/main.js';
import { catalogFromStore } from '../../agent/plan/from-catalog.js';
import type { PlanBoard } from '../../agent/plan/types.js';
import { procSystemMemory } from '../../agent/runtime/engine/proc-memory.js';
import { runtimeHealth, runtimeSlotStates } from '../../agent/runtime/measuring/slot-states.js';
import { createRuntimeModule, unavailableHosts } from '../../agent/runtime/module.js';
import { TelemetryHistory } from '../../agent/telemetry/history.js';
import { cpuSampler, memorySampler, thermalSampler } from '../../agent/telemetry/samplers.js';
import { createWorkloadsModule } from '../../agent/workloads/module.js';
import { type EngineAvailability, unavailableMessage } from '../../engine/index.js';
import { defaultDownloadPolicy } from '../../lib/download/downloader.js';
import { createLogger } from '../../lib/log.js';
import { LogTail } from '../../lib/log-tail.js';
import { hubClient, hubSettings } from '../../models/hub/clients.js';
import { HubPullJobs } from '../../models/hub/pull-jobs.js';
import { ModelCatalog } from '../../models/index.js';
import { JobJournal } from '../../ota/jobs/journal.js';
import { fixtureModelsModule, type ModelSource, testBoard } from '../engine/_slots.js';
import { repoRoot } from '../helpers/paths.js';

// An agent composed the way the daemon composes it (real detect on a fixture root, the engine as an engine host
// reports it, real telemetry samplers and history, the OTA journal, the in-memory log tail) serving the built
// dashboard, and a real headless Chromium with fake camera and microphone pointed at it. Loopback only.

export const CHROMIUM = process.env['MNN_EDGE_CHROMIUM'] ?? '/usr/bin/chromium';
export const artifactsDir = join(repoRoot, 'test-artifacts', 'dashboard');

export function buildDashboard(): void {
  execFileSync(process.execPath, [join(repoRoot, 'dashboard', 'build.mjs')], { stdio: 'pipe' });
}

export interface DashboardAgent {
  agent: Agent;
  /** The runtime the slots are served by (the e2e asks a slot for an answer through it). */
  runtime(): import('../../agent/runtime/runtime.js').Runtime | undefined;
  url: string;
  token: string;
  logTail: LogTail;
  stop(): Promise<void>;
}

/** Starts samplers feeding history and the live hub, as the telemetry module does, once a second. */
function telemetryLoop(root: string, history: TelemetryHistory, hub: SampleHub): () => void {
  const samplers = [cpuSampler(), memorySampler(), thermalSampler(root)];
  let stopped = false;
  const timer = setInterval(async () => {
    const values: Record<string, number> = {};
    for (const s of samplers) Object.assign(values, await s.sample().catch(() => ({})));
    // A round still sampling when the agent stops must not write to its closed database.
    if (stopped) return;
    const t = Date.now();
    history.record(
      Object.fromEntries(Object.entries(values).map(([k, v]) => [k, { n: 1, min: v, max: v, mean: v }])),
      t,
    );
    hub.publish({ t, values });
  }, 1000);
  return () => {
    stopped = true;
    clearInterval(timer);
  };
}

export async function startDashboardAgent(options: {
  root: string;
  /** Voice and vision config; when given, the real workloads module runs over the runtime's slots. */
  workloads?: { voice: Record<string, unknown>; vision: Record<string, unknown> };
  /** Slots for the real runtime module. */
  slots?: Record<string, unknown>;
  /** Fixture models imported into the agent's model store at start (the runtime plans the slots over them). */
  fixtures?: readonly ModelSource[];
  /** Run the real fleet module against this MQTT broker URL (loopback only). */
  brokerUrl?: string;
  /** Serve over HTTPS with this certificate and key (PEM paths). */
  tls?: { cert: string; key: string };
  /** Which engine the agent sees; default: the installed one. An unavailable engine also stands in for the
   *  runtime's engine hosts, so the workloads report the same reason. */
  availability?: () => EngineAvailability;
  extraModules?: AgentModule[];
  /** The board the runtime plans for; default testBoard (one CPU thread, no GPU backend). */
  board?: () => PlanBoard;
  /** "Get models" against these hub endpoints (the loopback stand-ins); installs replan the slots. */
  hubs?: { hf: string; ms: string };
}): Promise<DashboardAgent> {
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-e2e-'));
  const base = defaultConfig({});
  const config: AgentConfig = {
    ...base,
    dataDir: join(dir, 'data'),
    root: options.root,
    http: { ...base.http, bind: '127.0.0.1', port: 0, ...(options.tls ? { tls: options.tls } : {}) },
    ...(options.slots ? { slots: options.slots } : {}),
    ...(options.brokerUrl ? { mqtt: { ...base.mqtt, url: options.brokerUrl } } : {}),
    ...(options.workloads ? { voice: options.workloads.voice, vision: options.workloads.vision } : {}),
    // A pulled model is placed at once; the background probe would only add load to a shared test machine.
    ...(options.hubs ? { runtime: { probeAfterInstall: false } } : {}),
  };
  // One limit for every live session: the dashboard's telemetry stream and the voice and vision sockets.
  const sessions = createSessionLimiter(config.http.maxSessions);
  const workloads = options.workloads
    ? createWorkloadsModule({
        runtime: () => runtime.runtime(),
        sessions,
        slotStates: () => {
          const rt = runtime.runtime();
          return rt ? runtimeSlotStates(rt) : [];
        },
      })
    : undefined;
  const fleet = options.brokerUrl ? createFleetModule({ agentVersion: '0.0.0-e2e' }) : undefined;
  let broker: ReturnType<typeof brokerStatusFrom> | undefined;
  const workloadsPort: WorkloadsPort | undefined = workloads
    ? { voice: () => workloads.voiceStatus(), vision: () => workloads.visionStatus() }
    : undefined;
  const caps = detect({ root: options.root });
  const given = options.availability?.();
  const { module: modelsModule, store: storeOf } = fixtureModelsModule(options.fixtures ?? []);
  const runtime = createRuntimeModule({
    ...(given && !given.available ? { hosts: unavailableHosts(unavailableMessage(given.reason)) } : {}),
    catalog: () => {
      const store = storeOf();
      return catalogFromStore(store ? new ModelCatalog(store).variants() : []);
    },
    // The engine hosts run on this machine, not on the captured board: plan them for this machine (one thread
    // per host, no core pinning), while the Overview shows the fixture board as detected.
    board: options.board ?? (() => testBoard),
    memory: procSystemMemory('/'),
    ...(options.hubs
      ? {
          installs: {
            on: (event: 'installed', listener: (ref: { id: string; version: string }) => void) => {
              const store = storeOf();
              if (!store) return () => {};
              store.on(event, listener);
              return () => store.off(event, listener);
            },
          },
        }
      : {}),
  });
  const hubModels = options.hubs
    ? {
        sources: {
          hf: { endpoint: options.hubs.hf },
          ms: { endpoint: options.hubs.ms },
          allowLoopbackHttp: true,
        },
      }
    : undefined;
  const pulls = hubModels
    ? new HubPullJobs({
        store: storeOf,
        client: (hub) => hubClient(hub, hubSettings(hub, hubModels, {})),
        download: { ...defaultDownloadPolicy, headroomBytes: 0 },
        workRoot: join(dir, 'data', 'hub-downloads'),
      })
    : undefined;
  const logTail = new LogTail();
  const logger = createLogger({ level: 'debug', write: logTail.write });
  const hub = new SampleHub();
  let stopSampling: (() => void) | undefined;
  const dashboard = createDashboardModule({
    version: '0.0.0-e2e',
    distDir: join(repoRoot, 'dashboard', 'dist'),
    logTail,
    sessions,
    sources: (ctx): DashboardSources => {
      if (fleet?.agent) broker = brokerStatusFrom(fleet.agent);
      const history = new TelemetryHistory(ctx.db, { bucketSec: 10, retentionHours: 24 }, ctx.clock);
      stopSampling = telemetryLoop(options.root, history, hub);
      const store = storeOf();
      return {
        capabilities: () => caps,
        // As the daemon should: what the runtime's engine-info host reported, never MNN in this process.
        engine: engineStatusFrom(
          options.availability ??
            (() =>
              runtime.engineAvailability() ?? {
                available: false,
                reason: 'the runtime module has not probed the engine yet',
              }),
        ),
        telemetry: telemetryPortFrom(history, hub),
        ota: otaPortFrom(new JobJournal(ctx.db)),
        models: store ? modelsPortFrom(store) : { installed: () => [], installs: () => [] },
        placement: placementPortFrom(runtime.runtime()!, options.board ?? (() => testBoard)),
        health: () => runtimeHealth(runtime.runtime()!),
        ...(workloadsPort ? { workloads: workloadsPort } : {}),
        ...(broker ? { broker: broker.status } : {}),
        ...(hubModels && pulls
          ? {
              hub: hubPortFrom({
                models: hubModels,
                env: {},
                store: storeOf,
                pulls,
                recommendContext: () => ({
                  board: testBoard,
                  policy: planPolicyFromConfig(undefined),
                  probes: [],
                  engineVersion: runtime.runtime()?.engineVersion ?? 'unknown',
                  contextTokens: {
                    'voice.llm': 2048,
                    'voice.omni': 2048,
                    'vision.vlm': 2048,
                    'voice.asr': 512,
                  },
                }),
              }),
            }
          : {}),
      };
    },
  });
  const agent = createAgent(config, {
    logger,
    version: '0.0.0-e2e',
    modules: [
      modelsModule,
      runtime,
      ...(workloads ? [workloads] : []),
      ...(fleet ? [fleet] : []),
      ...(options.extraModules ?? []),
      dashboard,
    ],
  });
  await agent.start();
  // Every fixture slot served (or failed with its reason) before a page asks what the workloads can do.
  if (options.fixtures?.length) await runtime.runtime()?.settled();
  const token = readFileSync(join(config.dataDir, 'pairing-token'), 'utf8').trim();
  return {
    agent,
    runtime: () => runtime.runtime(),
    url: `${agent.http.secure ? 'https' : 'http'}://127.0.0.1:${agent.http.port}`,
    token,
    logTail,
    async stop() {
      await pulls?.close();
      stopSampling?.();
      broker?.dispose();
      await agent.stop('e2e done');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A fresh profile every time, no network beyond loopback, fake media devices fed from fixture files. */
export async function launchChromium(
  fakeAudioWav: string,
): Promise<{ context: BrowserContext; close(): Promise<void> }> {
  if (!existsSync(CHROMIUM))
    throw new Error(`Chromium not found at ${CHROMIUM} (install Debian's chromium or set MNN_EDGE_CHROMIUM)`);
  const profile = mkdtempSync(join(tmpdir(), 'mnn-edge-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    // The TLS test's certificate is self-signed, made for that test.
    ignoreHTTPSErrors: true,
    viewport: { width: 1280, height: 900 },
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--use-fake-device-for-media-stream',
      '--use-fake-ui-for-media-stream',
      // %noloop: the file plays once, then silence, so the agent's VAD sees the utterance end.
      `--use-file-for-fake-audio-capture=${fakeAudioWav}%noloop`,
      '--autoplay-policy=no-user-gesture-required',
    ],
  });
  return {
    context,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

export async function screenshot(page: Page, name: string): Promise<string> {
  mkdirSync(artifactsDir, { recursive: true });
  const path = join(artifactsDir, `${name}.png`);
  await page.screenshot({ path, fullPage: true });
  return path;
}

/** What the page shows and what went wrong in it: for a failure message, where a screenshot alone says little. */
async function pageState(page: Page, problems: string[]): Promise<string> {
  const shown = await page
    .evaluate(
      () =>
        `readyState ${document.readyState}, #app: ${document.getElementById('app')?.innerHTML.slice(0, 300)}`,
    )
    .catch((err: Error) => `not readable: ${err.message}`);
  return `${page.url()}; ${shown}; console errors and failed requests: ${problems.slice(0, 10).join(' | ') || 'none'}`;
}

export async function login(page: Page, url: string, token: string): Promise<void> {
  const problems: string[] = [];
  const onConsole = (m: ConsoleMessage) => {
    if (m.type() === 'error') problems.push(`console: ${m.text()}`);
  };
  const onPageError = (err: Error) => problems.push(`page error: ${err.message}`);
  const onRequestFailed = (r: Request) =>
    problems.push(`request failed: ${r.url()} ${r.failure()?.errorText ?? ''}`);
  page.on('console', onConsole);
  page.on('pageerror', onPageError);
  page.on('requestfailed', onRequestFailed);
  try {
    await page.goto(`${url}/#/login`);
    // A loaded machine (a CI runner beside another daemon loading models) can take longer than Playwright's 30 s
    // default to render the form; the budget is for that, not for a healthy page. Once (a CI run beside the
    // soak) a fresh page showed no form for 120 s while the same test passed everywhere else: the page is then
    // loaded once more, and what it showed is printed, so a next time says what happened instead of hiding it.
    const form = page.getByTestId('token');
    const firstTry = await form.waitFor({ timeout: 60_000 }).then(
      () => undefined,
      () => pageState(page, problems),
    );
    if (firstTry !== undefined) {
      console.log(`login: no form after 60 s, loading the page again (it showed: ${firstTry})`);
      await screenshot(page, 'login-no-form').catch(() => undefined);
      await page.reload();
      await form.waitFor({ timeout: 60_000 }).catch(async (err: Error) => {
        throw new Error(
          `${err.message}\nfirst load: ${firstTry}\nafter a reload: ${await pageState(page, problems)}`,
        );
      });
    }
    await form.fill(token);
    await page.getByTestId('login').click();
    await page.waitForSelector('[data-page="overview"] [data-testid="board-name"]');
  } finally {
    page.off('console', onConsole);
    page.off('pageerror', onPageError);
    page.off('requestfailed', onRequestFailed);
  }
}
