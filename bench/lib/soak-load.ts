// The soak benchmark's clients: each request kind as an outside user sends it (the fleet operator over MQTT,
// Home Assistant's Wyoming flow with the repo's upstream-style client, the OpenAI API over HTTP, the dashboard's
// voice socket), timed from send to answer. Each resolves or throws with the reason; soak.bench.ts records it.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import WebSocket from 'ws';
import type { FleetOperator } from '../../agent/operator/fleet/operator.js';
import { mediaFixturesDir } from '../../test/helpers/paths.js';
import { WyomingTestClient } from '../../test/helpers/wyoming-client.js';

export interface Endpoints {
  http: string;
  token: string;
  wyomingPort: number;
  deviceId: string;
}

type Json = Record<string, unknown>;
const speech = readFileSync(join(mediaFixturesDir, 'speech-hello-16k.wav')).subarray(44);
const format = { rate: 16000, width: 2, channels: 1 };

export async function fleetPing(operator: FleetOperator, e: Endpoints): Promise<void> {
  const [r] = await operator.command({ deviceId: e.deviceId }, 'ping', { echo: 'soak' }, 20_000);
  if (!r) throw new Error('fleet ping: no response within 20 s');
  if (!r.ok) throw new Error(`fleet ping: ${r.error?.code} ${r.error?.message}`);
}

/** Home Assistant's health check: connect, describe, info, close. */
export async function wyomingDescribe(e: Endpoints): Promise<void> {
  const c = await WyomingTestClient.connect(e.wyomingPort);
  try {
    c.send('describe');
    await c.next('info', 0, 30_000);
  } finally {
    c.close();
  }
}

/** A whole Assist pipeline run over Wyoming: speech to text, the conversation, text to speech. */
export async function wyomingTurn(e: Endpoints, n: number): Promise<void> {
  const c = await WyomingTestClient.connect(e.wyomingPort);
  try {
    c.send('transcribe', { language: 'en' });
    c.send('audio-start', format);
    for (let at = 0; at < speech.length; at += 640)
      c.send('audio-chunk', format, speech.subarray(at, at + 640));
    c.send('audio-stop');
    const heard = await c.next('transcript', 0, 120_000);
    let from = c.events.length;
    c.send('transcript', { text: String(heard.data['text']), context: { conversation_id: `soak-${n % 8}` } });
    const handled = await c.next('handled', from, 120_000);
    from = c.events.length;
    c.send('synthesize', { text: String(handled.data['text']).slice(0, 200) || 'OK.' });
    await c.next('audio-stop', from, 120_000);
    const err = c.events.find((ev) => ev.type === 'error');
    if (err) throw new Error(`wyoming error ${err.data['code']}: ${err.data['text']}`);
  } finally {
    c.close();
  }
}

const chatBody = (stream: boolean) =>
  JSON.stringify({
    model: 'tiny-llm',
    messages: [{ role: 'user', content: 'Say hello.' }],
    max_tokens: 16,
    stream,
  });

async function post(e: Endpoints, body: string, signal?: AbortSignal): Promise<Response> {
  const res = await fetch(`${e.http}/v1/chat/completions`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${e.token}`, 'Content-Type': 'application/json' },
    body,
    ...(signal ? { signal } : {}),
  });
  if (!res.ok) throw new Error(`openai HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
  return res;
}

export async function openaiPlain(e: Endpoints): Promise<void> {
  const j = (await (await post(e, chatBody(false))).json()) as { choices?: Array<{ message?: Json }> };
  if (typeof j.choices?.[0]?.message?.['content'] !== 'string') throw new Error('openai: no content');
}

export async function openaiStream(e: Endpoints): Promise<void> {
  const text = await (await post(e, chatBody(true))).text();
  if (!text.includes('data: [DONE]')) throw new Error('openai stream: no [DONE]');
}

/** A client that goes away after the first streamed chunk: the agent must cancel, not leak, the generation. */
export async function openaiCancelled(e: Endpoints): Promise<void> {
  const ctl = new AbortController();
  const res = await post(e, chatBody(true), ctl.signal);
  const reader = res.body!.getReader();
  await reader.read();
  ctl.abort();
  await reader.cancel().catch(() => undefined);
}

/** A dashboard push-to-talk turn over the voice socket: the speech, then the reply until turn-end. */
export async function voiceSocketTurn(e: Endpoints): Promise<void> {
  const ws = new WebSocket(`${e.http.replace('http', 'ws')}/ws/voice`, {
    headers: { Authorization: `Bearer ${e.token}` },
  });
  const seen: Json[] = [];
  let wake: () => void = () => {};
  let closed = '';
  ws.on('message', (d, binary) => {
    if (!binary) seen.push(JSON.parse(String(d)) as Json);
    wake();
  });
  ws.on('close', (code, reason) => {
    closed = `socket closed ${code} ${reason.toString()}`;
    wake();
  });
  const next = async (type: string) => {
    const deadline = performance.now() + 120_000;
    for (;;) {
      const m = seen.find((x) => x['type'] === type || x['type'] === 'error');
      if (m?.['type'] === 'error') throw new Error(`voice socket error: ${JSON.stringify(m)}`);
      if (m) return m;
      if (closed || performance.now() > deadline) throw new Error(`voice socket: no ${type} (${closed})`);
      await new Promise<void>((r) => {
        wake = r;
        setTimeout(r, 250).unref();
      });
    }
  };
  try {
    await new Promise((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('error', reject);
    });
    ws.send(JSON.stringify({ type: 'start', mode: 'push-to-talk', duplex: 'full' }));
    await next('ready');
    ws.send(JSON.stringify({ type: 'ptt', pressed: true }));
    for (let at = 0; at < speech.length; at += 6400) ws.send(speech.subarray(at, at + 6400));
    await new Promise((r) => setTimeout(r, 300));
    ws.send(JSON.stringify({ type: 'ptt', pressed: false }));
    const end = await next('turn-end');
    if (end['status'] !== 'completed') throw new Error(`voice turn ended ${JSON.stringify(end)}`);
  } finally {
    ws.close();
  }
}

/** The dashboard's overview, as an open browser tab re-reads it. */
export async function overview(e: Endpoints): Promise<void> {
  const res = await fetch(`${e.http}/api/overview`, { headers: { Authorization: `Bearer ${e.token}` } });
  if (!res.ok) throw new Error(`overview HTTP ${res.status}`);
  await res.arrayBuffer();
}
