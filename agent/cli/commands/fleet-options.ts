import { readFileSync } from 'node:fs';
import { MnnEdgeError } from '../../../lib/errors.js';
import { brokerUrls } from '../../config/sections/mqtt.js';
import type { OperatorOptions } from '../../operator/fleet/operator.js';
import { type ParsedArgs, stringFlag, UsageError } from '../common/args.js';
import { configFromFlags } from './config.js';

// How the fleet tools reach the broker: --url, then MNN_EDGE_MQTT_URL, then the agent configuration (mqtt.url,
// else its embedded broker on localhost), with credentials and TLS files from flags or the environment.

export const CONNECTION_FLAGS = ['url', 'mqtt-version', 'username', 'password', 'ca', 'cert', 'key'] as const;

export function positiveInt(args: ParsedArgs, name: string, fallback: number): number {
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
  // --url and MNN_EDGE_MQTT_URL take one broker or a comma-separated list of a cluster's nodes.
  const given = stringFlag(args, 'url') ?? env['MNN_EDGE_MQTT_URL'];
  let urls = given
    ?.split(',')
    .map((u) => u.trim())
    .filter(Boolean);
  let protocolVersion: 4 | 5 | undefined;
  if (urls === undefined || urls.length === 0) {
    const { config } = configFromFlags(args, env);
    const configured = brokerUrls(config.mqtt);
    if (configured.length > 0) {
      urls = configured;
      if (config.mqtt.protocolVersion !== 'auto') protocolVersion = config.mqtt.protocolVersion;
    } else {
      const host = config.mqtt.embeddedBroker.host.includes(':')
        ? `[${config.mqtt.embeddedBroker.host}]`
        : config.mqtt.embeddedBroker.host;
      urls = [`mqtt://${host}:${config.mqtt.embeddedBroker.port}`];
      protocolVersion = 4; // the embedded broker speaks MQTT 3.1.1
    }
  }
  for (const url of urls)
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
    url: urls,
    ...(protocolVersion !== undefined ? { protocolVersion } : {}),
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(ca ? { ca } : {}),
    ...(cert ? { cert } : {}),
    ...(key ? { key } : {}),
  };
}
