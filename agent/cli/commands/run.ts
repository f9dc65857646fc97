import { createLogger } from '../../../lib/log.js';
import { LogTail } from '../../../lib/log-tail.js';
import type { composeModules } from '../../compose.js';
import { createAgent } from '../../main.js';
import { createSystemdNotifier } from '../../systemd/index.js';
import { parseArgs, UsageError } from '../common/args.js';
import type { Command } from '../common/command.js';
import { CONFIG_FLAGS, configFromFlags } from './config.js';
import { agentVersion } from './version.js';

type ShutdownSignal = 'SIGTERM' | 'SIGINT';

/** Resolves with the first SIGTERM/SIGINT; a second one while stopping exits at once (a stuck stop). */
function nextShutdownSignal(): { signal: Promise<ShutdownSignal>; dispose(): void } {
  let onSignal: ((s: ShutdownSignal) => void) | undefined;
  const signal = new Promise<ShutdownSignal>((resolve) => {
    onSignal = (s) => {
      process.off('SIGTERM', onSignal!);
      process.off('SIGINT', onSignal!);
      process.once('SIGTERM', () => process.exit(143));
      process.once('SIGINT', () => process.exit(130));
      resolve(s);
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  });
  return {
    signal,
    dispose() {
      if (onSignal) {
        process.off('SIGTERM', onSignal);
        process.off('SIGINT', onSignal);
      }
    },
  };
}

export const command: Command = {
  name: 'run',
  summary: 'run the agent (HTTP server, auth, and every module) until SIGTERM/SIGINT',
  usage: 'mnn-edge run [--config FILE] [--root DIR] [--port N] [--bind ADDR] [--data-dir DIR]',
  async run(argv, io) {
    const args = parseArgs(argv, { values: [...CONFIG_FLAGS, 'port', 'bind'] });
    if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
    const loaded = configFromFlags(args, io.env);
    const { config, source } = loaded;
    // The fleet's `logs` command and the dashboard read the same lines journald gets.
    const logs = new LogTail();
    const logger = createLogger({
      level: config.log.level,
      debug: config.log.debug ?? io.env['DEBUG'],
      write: (line) => {
        io.stdout.write(`${line}\n`);
        logs.write(line);
      },
    });
    // A no-op outside a Type=notify unit. Made first, so that a slow but live start asks systemd for more time
    // before TimeoutStartSec runs out (a busy board, a long migration).
    const systemd = createSystemdNotifier({ env: io.env, logger });
    systemd.extendStartWhileAlive();
    logger.info('starting', {
      version: agentVersion(),
      config: source,
      settingsRevision: loaded.inputs.overlay.revision,
      pid: process.pid,
      atMs: Math.round(performance.now()),
    });
    // The modules' code loads once the agent answers: nothing of theirs is on the path to READY.
    let composed: ReturnType<typeof composeModules> | undefined;
    const agent = createAgent(config, {
      logger,
      version: agentVersion(),
      // A run-time settings file that could not be used is on /healthz (and the dashboard) until the next change.
      healthDetails: () => {
        const settings = composed?.services.settings().service();
        const problem = settings?.problem ?? loaded.inputs.overlay.problem;
        return {
          settings: {
            revision: settings?.revision ?? loaded.inputs.overlay.revision,
            ...(problem ? { problem } : {}),
          },
        };
      },
      modules: async () => {
        const { composeModules } = await import('../../compose.js');
        composed = composeModules(config, {
          agentVersion: agentVersion(),
          logs,
          loaded,
          reloadConfig: () => configFromFlags(args, io.env),
        });
        return composed.modules;
      },
    });
    const shutdown = nextShutdownSignal();
    // SIGHUP: re-read the file and the run-time settings, detect again and replan (after `mnn-edge models
    // import`, say). An invalid file is refused whole: the running configuration stays. Listened for from the
    // start: systemd allows `systemctl reload` once READY=1 is out, before every module has started, and Node's
    // default for SIGHUP is to exit, which systemd counts as a clean stop (no restart): an early reload stopped the
    // agent for good (found by the system tier). A reload asked for during the start runs once the start is done.
    let startDone = false;
    let reloadPending = false;
    const reload = () => {
      composed?.services
        .reloadFromDisk('SIGHUP')
        .then((result) => logger.info('reloaded', result))
        .catch((err: unknown) =>
          logger.error('reload refused: the configuration is invalid; keeping the running one', { err }),
        );
    };
    const onHangup = () => {
      if (startDone) return reload();
      if (!reloadPending) logger.info('reload asked for while starting: it runs once the agent has started');
      reloadPending = true;
    };
    process.on('SIGHUP', onHangup);
    // WATCHDOG=1 stops when the event loop is blocked or the runtime's reconcile loop hangs inside a run (a
    // driver that never returns); a model that keeps failing to load is the runtime's fallback business, not a
    // reason for systemd to restart the agent. Before the modules are composed only the event loop counts.
    const loopHealthy = () => {
      const health = composed?.services.runtime()?.health();
      return !health || !(health.running && !health.healthy);
    };
    const started = agent.start();
    try {
      // READY as soon as the agent answers; a module that then fails to start still fails the start.
      await Promise.race([agent.serving, started]);
      await systemd.ready();
      logger.info('ready notified', { atMs: Math.round(performance.now()) });
      // systemd arms WatchdogSec at READY=1, so the pings start here, not once every module has started: a module
      // start longer than WatchdogSec (a model load on a busy board) would have the agent killed as hung.
      systemd.startWatchdog(loopHealthy);
      await started;
    } catch (err) {
      process.off('SIGHUP', onHangup);
      shutdown.dispose();
      await systemd.stopping();
      throw err;
    }
    startDone = true;
    if (reloadPending) reload();
    await systemd.status(`serving on ${agent.http.address}:${agent.http.port} as ${agent.identity.deviceId}`);
    const stoppedByItself = new Promise<string>((resolve) =>
      agent.events.once('stopped', (e) => resolve(e.reason)),
    );
    const reason = await Promise.race([shutdown.signal.then((s) => `signal ${s}`), stoppedByItself]);
    process.off('SIGHUP', onHangup);
    await systemd.stopping();
    await agent.stop(reason);
    shutdown.dispose();
    return 0;
  },
};
