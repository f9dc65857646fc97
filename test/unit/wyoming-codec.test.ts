// The Wyoming framing and audio conversions alone: headers with data and payload, streams cut anywhere, every
// limit, and PCM of every width/rate/channel count into the 16 kHz mono float the ASR stage takes.
import test from 'ava';
import { PIPELINE_RATE, resample } from '../../agent/workloads/audio/pcm.js';
import {
  decodeIntPcm,
  WyomingAudioIn,
  WyomingAudioOut,
  wyomingAudioFormat,
} from '../../agent/workloads/wyoming/audio.js';
import {
  encodeEvent,
  WYOMING_VERSION,
  WyomingDecoder,
  type WyomingEvent,
} from '../../agent/workloads/wyoming/codec.js';
import { ConversationHistories } from '../../agent/workloads/wyoming/conversations.js';
import { buildInfo } from '../../agent/workloads/wyoming/info.js';
import { allowList, clientAllowed } from '../../agent/workloads/wyoming/server.js';

const limits = { maxHeaderBytes: 1024, maxDataBytes: 2048, maxPayloadBytes: 4096 };

function decodeAll(bytes: Buffer, cuts: number[] = []): WyomingEvent[] {
  const d = new WyomingDecoder(limits);
  const out: WyomingEvent[] = [];
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    out.push(...d.push(bytes.subarray(at, cut)));
    at = cut;
  }
  return out;
}

test('an event is a header line, then data JSON, then payload; data_length and payload_length count bytes', (t) => {
  const payload = Buffer.from([1, 2, 3, 4]);
  const bytes = encodeEvent({
    type: 'audio-chunk',
    data: { rate: 16000, width: 2, channels: 1, text: 'é' },
    payload,
  });
  const nl = bytes.indexOf(0x0a);
  const header = JSON.parse(bytes.subarray(0, nl).toString('utf8')) as Record<string, unknown>;
  const data = bytes.subarray(nl + 1, nl + 1 + (header['data_length'] as number));
  t.deepEqual(header, {
    type: 'audio-chunk',
    version: WYOMING_VERSION,
    data_length: data.length,
    payload_length: 4,
  });
  t.deepEqual(JSON.parse(data.toString('utf8')), { rate: 16000, width: 2, channels: 1, text: 'é' });
  t.deepEqual(bytes.subarray(nl + 1 + data.length), payload);
  // No data and no payload: the header alone.
  t.is(
    encodeEvent({ type: 'describe', data: {} }).toString(),
    `{"type":"describe","version":"${WYOMING_VERSION}"}\n`,
  );
});

test('the decoder gives the same events however the stream is cut, header data merged under the extra data', (t) => {
  const a = Buffer.from(
    `${JSON.stringify({ type: 'synthesize', data: { text: 'old', keep: 1 }, data_length: 14 })}\n{"text":"new"}`,
  );
  const b = encodeEvent({ type: 'audio-chunk', data: { rate: 8000 }, payload: Buffer.alloc(10, 7) });
  const c = Buffer.from('{"type":"describe"}\n');
  const stream = Buffer.concat([a, b, c]);
  const whole = decodeAll(stream);
  t.deepEqual(whole[0], { type: 'synthesize', data: { text: 'new', keep: 1 } });
  t.is(whole[1]!.payload!.length, 10);
  t.deepEqual(whole[2], { type: 'describe', data: {} });
  for (let cut = 1; cut < stream.length; cut++) t.deepEqual(decodeAll(stream, [cut]), whole, `cut at ${cut}`);
  t.deepEqual(decodeAll(stream, [...Array(stream.length).keys()].slice(1)), whole, 'one byte at a time');
});

test('malformed frames are specific errors', (t) => {
  const err = (text: string | Buffer) => {
    try {
      decodeAll(Buffer.isBuffer(text) ? text : Buffer.from(text));
      return 'no error';
    } catch (e) {
      return `${(e as { code: string }).code}: ${(e as Error).message}`;
    }
  };
  t.regex(err('{"type": \n'), /^EBADJSON: Wyoming header is not valid JSON/);
  t.is(err('[1,2]\n'), 'EFRAME: Header line must be a JSON object');
  t.is(err('{"data":{}}\n'), 'EFRAME: Header field type must be a string of 1 to 64 characters, got nothing');
  t.is(err('{"type":"x","data":[1]}\n'), 'EFRAME: Header field data must be a JSON object');
  t.is(
    err('{"type":"x","payload_length":-1}\n'),
    'EFRAME: Header field payload_length must be a non-negative integer, got -1',
  );
  t.is(
    err('{"type":"x","data_length":"3"}\n'),
    'EFRAME: Header field data_length must be a non-negative integer, got "3"',
  );
  t.is(
    err('{"type":"x","payload_length":1e12}\n'),
    'ETOOLARGE: Header field payload_length is 1000000000000 bytes, over the limit of 4096',
  );
  t.is(
    err('{"type":"x","data_length":4}\n[1,]'),
    'EBADJSON: Wyoming event data is not valid JSON: Unexpected token \']\', "[1,]" is not valid JSON',
  );
  t.is(err('{"type":"x","data_length":3}\n[1]'), 'EFRAME: Event data after the header must be a JSON object');
  t.is(
    err(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('\n')])),
    'EPAYLOAD: Wyoming header is not valid UTF-8 text',
  );
  t.is(
    err(`{"type":"${'a'.repeat(2000)}"}`),
    'ETOOLARGE: Header line is over the limit of 1024 bytes without a newline',
  );
  t.is(err(`${'['.repeat(100)}\n`), 'ETOODEEP: Wyoming header nests deeper than 64 levels');
  // A truncated payload is not an error: the decoder waits for the rest and says it is inside an event.
  const d = new WyomingDecoder(limits);
  t.deepEqual(d.push(Buffer.from('{"type":"x","payload_length":10}\n12345')), []);
  t.false(d.atBoundary);
  t.is(d.buffered, 5);
});

test('audio formats: every field checked by name', (t) => {
  t.deepEqual(wyomingAudioFormat({ rate: 44100, width: 3, channels: 2 }), {
    rate: 44100,
    width: 3,
    channels: 2,
  });
  t.throws(() => wyomingAudioFormat({ rate: 4000, width: 2, channels: 1 }), {
    message: 'Unsupported audio rate 4000: expected an integer from 8000 to 192000 Hz',
  });
  t.throws(() => wyomingAudioFormat({ rate: 16000, width: 5, channels: 1 }), {
    message: 'Unsupported audio width 5: expected 1, 2, 3 or 4 bytes per sample',
  });
  t.throws(() => wyomingAudioFormat({ rate: 16000, width: 2 }), {
    message: 'Unsupported audio channels missing: expected 1 to 8',
  });
  t.throws(() => decodeIntPcm(new Uint8Array(3), { rate: 16000, width: 2, channels: 1 }), {
    message: 'Audio chunk of 3 bytes is not a whole number of frames (1 channel(s) × 2 byte(s))',
  });
});

test('integer PCM of widths 1–4 decodes to the same values', (t) => {
  const value = 0.5;
  const f = (width: number) => ({ rate: 16000, width, channels: 1 });
  t.is(decodeIntPcm(Uint8Array.of(64), f(1))[0]![0], value);
  t.is(decodeIntPcm(Uint8Array.of(0x00, 0x40), f(2))[0]![0], value);
  t.is(decodeIntPcm(Uint8Array.of(0x00, 0x00, 0x40), f(3))[0]![0], value);
  t.is(decodeIntPcm(Uint8Array.of(0x00, 0x00, 0x00, 0x40), f(4))[0]![0], value);
  t.is(decodeIntPcm(Uint8Array.of(0x00, 0x00, 0x80), f(3))[0]![0], -1);
});

function sine(rate: number, seconds: number, hz = 440): Float32Array {
  return Float32Array.from(
    { length: Math.round(rate * seconds) },
    (_, i) => 0.5 * Math.sin((2 * Math.PI * hz * i) / rate),
  );
}

function s16(samples: Float32Array, channels = 1): Buffer {
  const b = Buffer.alloc(samples.length * 2 * channels);
  samples.forEach((v, i) => {
    for (let c = 0; c < channels; c++) b.writeInt16LE(Math.round(v * 32767), (i * channels + c) * 2);
  });
  return b;
}

test('audio in: 48 kHz stereo in 20 ms chunks is the same 16 kHz mono as the whole clip resampled at once', (t) => {
  const src = sine(48000, 0.5);
  const pcm = s16(src, 2);
  const audio = new WyomingAudioIn({ rate: 48000, width: 2, channels: 2 }, 30);
  for (let at = 0; at < pcm.length; at += 3840) audio.push(pcm.subarray(at, at + 3840));
  const got = audio.finish();
  const want = resample(decodeIntPcm(pcm, { rate: 48000, width: 2, channels: 2 })[0]!, 48000, PIPELINE_RATE);
  t.is(got.length, want.length);
  t.is(got.length, 8000);
  t.true(got.every((v, i) => Math.abs(v - want[i]!) < 1e-6));
});

test('audio in: 16 kHz mono passes through; over maxAudioSeconds is refused', (t) => {
  const audio = new WyomingAudioIn({ rate: 16000, width: 2, channels: 1 }, 1);
  audio.push(s16(sine(16000, 0.6)));
  t.is(audio.samples, 9600);
  t.throws(() => audio.push(s16(sine(16000, 0.6))), {
    message: 'Audio is longer than 1 s (wyoming.maxAudioSeconds): send shorter requests',
  });
  // A change of format mid-stream is followed.
  const mixed = new WyomingAudioIn({ rate: 16000, width: 2, channels: 1 }, 5);
  mixed.push(s16(sine(16000, 0.1)));
  mixed.push(s16(sine(8000, 0.1)), { rate: 8000, width: 2, channels: 1 });
  t.is(mixed.finish().length, 3200);
});

test('audio out: s16le at the first chunk rate; a chunk at another rate is resampled to it', (t) => {
  const out = new WyomingAudioOut();
  const a = out.push(sine(22050, 0.1), 22050);
  t.is(out.rate, 22050);
  t.is(a.length, 2205 * 2);
  const b = Buffer.concat([out.push(sine(24000, 0.1), 24000), out.flush()]);
  t.is(b.length / 2, 2205);
});

test('info lists only the roles that serve, with installed models and their versions', (t) => {
  const o = { languages: ['en'], agentVersion: '0.1.0' };
  t.deepEqual(buildInfo({}, o), {});
  const info = buildInfo(
    {
      asr: { slot: 'voice.asr', modelId: 'tiny-omni-audio', version: '1.0.0' },
      tts: { kind: 'espeak', voice: 'en-us' },
      reply: { slot: 'voice.llm', modelId: 'tiny-llm', version: '1.0.0' },
    },
    o,
  ) as Record<string, Array<Record<string, unknown>>>;
  t.deepEqual(Object.keys(info), ['asr', 'tts', 'handle']);
  const asrModel = (info['asr']![0]!['models'] as Array<Record<string, unknown>>)[0]!;
  t.like(asrModel, { name: 'tiny-omni-audio', installed: true, version: '1.0.0', languages: ['en'] });
  t.like(info['tts']![0], { name: 'espeak-ng', installed: true, supports_synthesize_streaming: true });
  t.like((info['tts']![0]!['voices'] as unknown[])[0], { name: 'en-us', languages: ['en-us'] });
  t.like((info['handle']![0]!['models'] as unknown[])[0], { name: 'tiny-llm', version: '1.0.0' });
  const talker = buildInfo(
    { tts: { kind: 'talker', slot: 'voice.tts', modelId: 'qwen3-tts', version: '2.0.0' } },
    o,
  ) as Record<string, Array<Record<string, unknown>>>;
  t.like((talker['tts']![0]!['voices'] as unknown[])[0], { name: 'qwen3-tts', version: '2.0.0' });
});

test('conversation histories: per id, bounded in messages and in conversations', (t) => {
  const h = new ConversationHistories(2, 4);
  const turn = (id: string, n: number) =>
    h.remember(id, { role: 'user', content: `q${n}` }, { role: 'assistant', content: `a${n}` });
  turn('a', 1);
  turn('a', 2);
  t.deepEqual(
    h.get('a').map((m) => m.content),
    ['q1', 'a1', 'q2', 'a2'],
  );
  // Past the bound, whole exchanges go at once (trimHistory: a third of the window, at least one exchange), so
  // the prompt's prefix stays the same for the turns in between and the engine keeps its KV.
  turn('a', 3);
  t.deepEqual(
    h.get('a').map((m) => m.content),
    ['q3', 'a3'],
  );
  turn('b', 1);
  h.get('a'); // a is now the most recent
  turn('c', 1);
  t.is(h.size, 2);
  t.deepEqual(h.get('b'), []);
  t.deepEqual(
    h.get('a').map((m) => m.content),
    ['q3', 'a3'],
  );
});

test('allow-list: addresses and ranges of both families, IPv4-mapped clients included', (t) => {
  const list = allowList(['192.168.1.0/24', '10.0.0.7', 'fd00::/8'])!;
  t.true(list.check('192.168.1.50', 'ipv4'));
  t.false(list.check('192.168.2.1', 'ipv4'));
  t.true(list.check('10.0.0.7', 'ipv4'));
  t.true(list.check('fd12::1', 'ipv6'));
  t.true(clientAllowed(list, '::ffff:192.168.1.9'));
  t.false(clientAllowed(list, '::ffff:172.16.0.1'));
  t.false(clientAllowed(list, undefined));
  t.true(clientAllowed(undefined, '203.0.113.5'));
  t.is(allowList([]), undefined);
  t.throws(() => allowList(['10.0.0.0/40']), {
    message: 'wyoming.allow: "10.0.0.0/40" has an invalid prefix length',
  });
  t.throws(() => allowList(['::g']), { message: 'wyoming.allow: "::g" is not an IP address or CIDR range' });
});
