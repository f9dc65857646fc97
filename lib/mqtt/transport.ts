// Opens an MQTT client. mqtt.js's connect() loads every transport it knows the first time it runs (its
// WebSocket stack, node:tls, node:https) whatever the URL says: about 2 MB of the idle daemon (bench/idle), when
// nearly every board talks plain mqtt:// to the embedded or local broker. A plain mqtt:// URL therefore gets the
// client over a TCP socket made here; the other schemes (mqtts, ws, wss) and a SOCKS proxy go through
// connect(), which loads what they need.
import { createConnection } from 'node:net';
import { connect, type IClientOptions, MqttClient } from 'mqtt';

export function connectMqtt(url: string, options: IClientOptions): MqttClient {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return connect(url, options);
  }
  if (parsed.protocol !== 'mqtt:' || process.env['MQTTJS_SOCKS_PROXY']) return connect(url, options);
  // An IPv6 literal keeps its brackets in URL.hostname; net.connect wants the bare address.
  const host = parsed.hostname.replace(/^\[(.*)\]$/, '$1') || 'localhost';
  const port = parsed.port === '' ? 1883 : Number(parsed.port);
  const opts: IClientOptions = { ...options, protocol: 'mqtt', host, hostname: host, port };
  if (parsed.username !== '' && opts.username === undefined) {
    opts.username = decodeURIComponent(parsed.username);
    if (parsed.password !== '') opts.password = decodeURIComponent(parsed.password);
  }
  const client = new MqttClient(() => createConnection({ host, port }), opts);
  // As connect() does: an 'error' before the caller's own listener is attached must not throw.
  client.on('error', () => {});
  return client;
}
