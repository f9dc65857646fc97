import { PassThrough } from 'node:stream';
import test from 'ava';
import { onLines } from '../../engine/src/host/lines.js';

function collect(maxChars?: number) {
  const stream = new PassThrough();
  const lines: string[] = [];
  onLines(stream, (l) => lines.push(l), maxChars);
  const ended = new Promise<void>((resolve) => stream.on('end', () => setImmediate(resolve)));
  return { stream, lines, ended };
}

test('lines split across chunks, CRLF, a multi-byte character cut between chunks, and a last line without newline', async (t) => {
  const { stream, lines, ended } = collect();
  const bytes = Buffer.from('The device supports: fp16\r\nCan\u2019t Find type=3\nlast');
  const cut = bytes.indexOf(0x80); // inside the three bytes of U+2019
  stream.write(bytes.subarray(0, cut));
  stream.write(bytes.subarray(cut));
  stream.end();
  stream.resume();
  await ended;
  t.deepEqual(lines, ['The device supports: fp16', 'Can\u2019t Find type=3', 'last']);
});

test('text without a newline is delivered in pieces once over the limit instead of growing without bound', async (t) => {
  const { stream, lines, ended } = collect(4);
  stream.write('abcdefghij');
  stream.end('\nxy\n');
  stream.resume();
  await ended;
  t.deepEqual(lines, ['abcd', 'efgh', 'ij', 'xy']);
});
