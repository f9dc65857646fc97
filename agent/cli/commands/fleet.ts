import { readFileSync } from 'node:fs';
import { MnnEdgeError } from '../../common/errors.js';
import { formatDeviceTable, formatResponses, formatTelemetryTable } from '../../fleet/format.js';
import { FleetOperator, type OperatorOptions } from '../../fleet/operator.js';
import type { FleetSelector, TelemetryMessage } from '../../fleet/protocol.js';
import { COMMAND_NAME, isValidDeviceId } from '../../fleet/topics.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo, Command } from '../common/command.js';
import { CONFIG_FLAGS, configFromFlags } from './config.js';

// `mnn-edge fleet`: the operator's view of the fleet over the MQTT contract. The broker comes from --url, then
// MNN_EDGE_MQTT_URL, then the agent configuration (mqtt.url, else its embedded broker on localhost), so on a
// single machine `mnn-edge fleet ls` just works next to `npm start`.

const USAGE = `mnn-edge fleet <ls | cmd | watch> [options]
  fleet ls [--wait MS] [--json]
  fleet cmd <device> <name> [params-json] [--timeout MS]
  fleet cmd (--tag T | --board FAMILY | --all) <name> [params-json] [--timeout MS]
  fleet watch [--device ID] [--count N]
common: --url URL [--mqtt-version 4|5] [--username U] [--password P] [--ca FILE] [--cert FILE] [--key FILE] [--config FILE]`;

const CONNECTION_FLAGS = ['url', 'mqtt-version', 'username', 'password', 'ca', 'cert', 'key'] as const;

function positiveInt(args: ParsedArgs, name: string, fallback: number): number {
  const raw = stringFlag(args, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < 1)
    throw new UsageError(`--${name} expects a positive integer, got "${raw}"`);
  return Number(raw);
}

function readPem(path: string | undefined, flag: string): Buffer | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path);
  } catch (err) {
    throw new MnnEdgeError('EUSAGE', `Cannot read --${flag} ${path}: ${(err as Error).message}`);
  }
}

export function operatorOptions(args: ParsedArgs, env: NodeJS.ProcessEnv): OperatorOptions {
  let url = stringFlag(args, 'url') ?? env['MNN_EDGE_MQTT_URL'];
  let protocolVersion: 4 | 5 | undefined;
  if (url === undefined) {
    const { config } = configFromFlags(args, env);
    if (config.mqtt.url) {
      url = config.mqtt.url;
      if (config.mqtt.protocolVersion !== 'auto') protocolVersion = config.mqtt.protocolVersion;
    } else {
      const host = config.mqtt.embeddedBroker.host.includes(':')
        ? `[${config.mqtt.embeddedBroker.host}]`
        : config.mqtt.embeddedBroker.host;
      url = `mqtt://${host}:${config.mqtt.embeddedBroker.port}`;
      protocolVersion = 4; // the embedded broker speaks MQTT 3.1.1
    }
  }
  if (!/^(mqtts?|wss?):\/\//.test(url))
    throw new UsageError(`--url must start with mqtt://, mqtts://, ws:// or wss://, got "${url}"`);
  const version = stringFlag(args, 'mqtt-version');
  if (version !== undefined) {
    if (version !== '4' && version !== '5')
      throw new UsageError(`--mqtt-version expects 4 or 5, got "${version}"`);
    protocolVersion = Number(version) as 4 | 5;
  }
  const username = stringFlag(args, 'username') ?? env['MNN_EDGE_MQTT_USERNAME'];
  const password = stringFlag(args, 'password') ?? env['MNN_EDGE_MQTT_PASSWORD'];
  const ca = readPem(stringFlag(args, 'ca'), 'ca');
  const cert = readPem(stringFlag(args, 'cert'), 'cert');
  const key = readPem(stringFlag(args, 'key'), 'key');
  return {
    url,
    ...(protocolVersion !== undefined ? { protocolVersion } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
  };
}

function parseParams(text: string | undefined): Record<string, unknown> {
  if (text === undefined) return {};
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`params must be JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new UsageError('params must be a JSON object, e.g. \'{"lines": 50}\'');
  return value as Record<string, unknown>;
}

async function ls(args: ParsedArgs, io: CliIo): Promise<number> {
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
  const op = await FleetOperator.connect(operatorOptions(args, io.env));
  try {
    const devices = await op.listDevices(positiveInt(args, 'wait', 1000));
    if (args.flags['json']) io.stdout.write(`${JSON.stringify(devices, null, 2)}\n`);
    else if (devices.length === 0) io.stdout.write('no devices have announced themselves on this broker\n');
    else io.stdout.write(formatDeviceTable(devices, Date.now()));
    return 0;
  } finally {
    await op.close();
  }
}

async function cmd(args: ParsedArgs, io: CliIo): Promise<number> {
  const selector: FleetSelector = {};
  const tag = stringFlag(args, 'tag');
  const board = stringFlag(args, 'board');
  if (tag !== undefined) selector.tags = [tag];
  if (board !== undefined) selector.boardFamilies = [board];
  const fleetWide = tag !== undefined || board !== undefined || args.flags['all'] === true;
  const rest = [...args.positionals];
  const deviceId = fleetWide ? undefined : rest.shift();
  const [name, paramsText, extra] = rest;
  if (!fleetWide && deviceId === undefined)
    throw new UsageError('name a device, or use --tag, --board or --all');
  if (deviceId !== undefined && !isValidDeviceId(deviceId))
    throw new UsageError(`invalid device id "${deviceId}"`);
  if (name === undefined) throw new UsageError('missing command name (e.g. ping, get-state, logs)');
  if (!COMMAND_NAME.test(name)) throw new UsageError(`invalid command name "${name}"`);
  if (extra !== undefined) throw new UsageError(`unexpected argument '${extra}'`);
  const params = parseParams(paramsText);
  const timeoutMs = positiveInt(args, 'timeout', fleetWide ? 3000 : 10_000);
  const op = await FleetOperator.connect(operatorOptions(args, io.env));
  try {
    const responses = await op.command(
      deviceId !== undefined ? { deviceId } : { selector },
      name,
      params,
      timeoutMs,
    );
    if (responses.length === 0) {
      io.stderr.write(`no device answered within ${timeoutMs} ms\n`);
      return 1;
    }
    if (deviceId !== undefined && responses[0]!.ok)
      io.stdout.write(`${JSON.stringify(responses[0]!.result, null, 2)}\n`);
    else io.stdout.write(formatResponses(responses));
    return responses.every((r) => r.ok) ? 0 : 1;
  } finally {
    await op.close();
  }
}

async function watch(args: ParsedArgs, io: CliIo): Promise<number> {
  if (args.positionals.length > 0) throw new UsageError(`unexpected argument '${args.positionals[0]}'`);
  const only = stringFlag(args, 'device');
  const count =
    stringFlag(args, 'count') === undefined ? Number.POSITIVE_INFINITY : positiveInt(args, 'count', 1);
  const tty = (io.stdout as { isTTY?: boolean }).isTTY === true;
  const op = await FleetOperator.connect(operatorOptions(args, io.env));
  const latest = new Map<string, TelemetryMessage>();
  let seen = 0;
  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => {
    finish = resolve;
  });
  const onSignal = () => finish();
  process.once('SIGINT', onSignal);
  const unwatch = await op.watch(
    (m) => {
      if (seen >= count || (only !== undefined && m.deviceId !== only)) return;
      latest.set(m.deviceId, m);
      // On a terminal the table is redrawn in place; piped output gets one table per update.
      io.stdout.write(
        (tty ? '\x1b[H\x1b[2J' : '') + formatTelemetryTable(latest, Date.now()) + (tty ? '' : '\n'),
      );
      if (++seen >= count) finish();
    },
    (topic, why) => io.stderr.write(`ignored invalid telemetry on ${topic}: ${why}\n`),
  );
  try {
    await done;
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    await unwatch();
    await op.close();
  }
}

export const command: Command = {
  name: 'fleet',
  summary: 'operate a fleet over MQTT: list devices, send commands, watch telemetry',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    const common = [...CONFIG_FLAGS, ...CONNECTION_FLAGS];
    switch (sub) {
      case 'ls':
        return ls(parseArgs(rest, { values: [...common, 'wait'], booleans: ['json'] }), io);
      case 'cmd':
        return cmd(
          parseArgs(rest, { values: [...common, 'tag', 'board', 'timeout'], booleans: ['all'] }),
          io,
        );
      case 'watch':
        return watch(parseArgs(rest, { values: [...common, 'device', 'count'] }), io);
      case undefined:
        throw new UsageError('missing subcommand (ls, cmd or watch)');
      default:
        throw new UsageError(`unknown subcommand '${sub}' (expected ls, cmd or watch)`);
    }
  },
};
