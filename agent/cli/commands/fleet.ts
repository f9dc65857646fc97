import { COMMAND_NAME, isValidDeviceId } from '../../../lib/topics.js';
import type { FleetSelector, TelemetryMessage } from '../../fleet/protocol.js';
import { formatDeviceTable, formatResponses, formatTelemetryTable } from '../../operator/fleet/format.js';
import { FleetOperator } from '../../operator/fleet/operator.js';
import {
  addressed,
  filterDevices,
  SORT_KEYS,
  type SortKey,
  sortDevices,
} from '../../operator/fleet/query.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo, Command } from '../common/command.js';
import { CONFIG_FLAGS } from './config.js';
import { FLEET_CONFIG_USAGE, fleetConfig } from './fleet-config.js';
import { CONNECTION_FLAGS, operatorOptions, positiveInt } from './fleet-options.js';

// `mnn-edge fleet`: the operator's view of the fleet over the MQTT contract. The broker comes from --url, then
// MNN_EDGE_MQTT_URL, then the agent configuration (mqtt.url, else its embedded broker on localhost), so on a
// single machine `mnn-edge fleet ls` just works next to `npm start`.

const USAGE = `mnn-edge fleet <ls | cmd | watch | config> [options]
  fleet ls [--tag T] [--board FAMILY] [--online yes|no] [--model ID[@VERSION]] [--sort id|board|status|telemetry-age|model] [--wait MS] [--json]
  fleet cmd <device> <name> [params-json] [--timeout MS] [--json]
  fleet cmd (--tag T | --board FAMILY | --all) <name> [params-json] [--timeout MS] [--json]
                 names the addressed online devices that did not answer by the deadline
  fleet watch [--device ID] [--count N]
${FLEET_CONFIG_USAGE}
common: --url URL[,URL…] [--mqtt-version 4|5] [--username U] [--password P] [--ca FILE] [--cert FILE] [--key FILE] [--config FILE]`;

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
  const op = await FleetOperator.connect({
    ...operatorOptions(args, io.env),
    onNotice: (line) => io.stderr.write(`${line}\n`),
  });
  try {
    const online = stringFlag(args, 'online');
    if (online !== undefined && online !== 'yes' && online !== 'no')
      throw new UsageError(`--online expects yes or no, got "${online}"`);
    const sort = (stringFlag(args, 'sort') ?? 'id') as SortKey;
    if (!SORT_KEYS.includes(sort)) throw new UsageError(`--sort expects one of ${SORT_KEYS.join(', ')}`);
    const tag = stringFlag(args, 'tag');
    const board = stringFlag(args, 'board');
    const model = stringFlag(args, 'model');
    const devices = sortDevices(
      filterDevices(await op.listDevices(positiveInt(args, 'wait', 1000)), {
        ...(tag !== undefined ? { tag } : {}),
        ...(board !== undefined ? { board } : {}),
        ...(model !== undefined ? { model } : {}),
        ...(online !== undefined ? { online: online === 'yes' } : {}),
      }),
      sort,
      Date.now(),
    );
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
  const op = await FleetOperator.connect({
    ...operatorOptions(args, io.env),
    onNotice: (line) => io.stderr.write(`${line}\n`),
  });
  try {
    // Who should answer: the online devices the selector addresses, from their retained status.
    const expected = deviceId === undefined ? addressed(await op.listDevices(300), selector) : [deviceId];
    const responses = await op.command(
      deviceId !== undefined ? { deviceId } : { selector },
      name,
      params,
      timeoutMs,
    );
    const answered = new Set(responses.map((r) => r.deviceId));
    const silent = expected.filter((d) => !answered.has(d));
    if (args.flags['json']) {
      io.stdout.write(`${JSON.stringify({ responses, noAnswer: silent, deadlineMs: timeoutMs }, null, 2)}\n`);
      return responses.length > 0 && silent.length === 0 && responses.every((r) => r.ok) ? 0 : 1;
    }
    if (deviceId === undefined && silent.length > 0)
      io.stderr.write(
        `${silent.length} of ${expected.length} addressed devices did not answer within ${timeoutMs} ms: ${silent.join(', ')}\n`,
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
  const op = await FleetOperator.connect({
    ...operatorOptions(args, io.env),
    onNotice: (line) => io.stderr.write(`${line}\n`),
  });
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
  summary:
    'operate a fleet over MQTT: list devices, send commands, watch telemetry, read and change settings',
  usage: USAGE,
  async run(argv, io) {
    const [sub, ...rest] = argv;
    const common = [...CONFIG_FLAGS, ...CONNECTION_FLAGS];
    switch (sub) {
      case 'ls':
        return ls(
          parseArgs(rest, {
            values: [...common, 'wait', 'tag', 'board', 'online', 'model', 'sort'],
            booleans: ['json'],
          }),
          io,
        );
      case 'cmd':
        return cmd(
          parseArgs(rest, { values: [...common, 'tag', 'board', 'timeout'], booleans: ['all', 'json'] }),
          io,
        );
      case 'watch':
        return watch(parseArgs(rest, { values: [...common, 'device', 'count'] }), io);
      case 'config':
        return fleetConfig(rest, io);
      case undefined:
        throw new UsageError('missing subcommand (ls, cmd, watch or config)');
      default:
        throw new UsageError(`unknown subcommand '${sub}' (expected ls, cmd, watch or config)`);
    }
  },
};
