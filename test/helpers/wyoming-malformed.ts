// Malformed Wyoming frames for the robustness tests: bad JSON, bad or huge lengths, truncation, garbage.

/** 200 malformed frames, each on its own connection: bad JSON, bad or huge lengths, truncation, garbage. */
export function malformedFrames(): Array<{ name: string; bytes: Buffer }> {
  const out: Array<{ name: string; bytes: Buffer }> = [];
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) & 0x7fffffff;
    return seed / 0x7fffffff;
  };
  const fixed = [
    '{"type": \n',
    '{type: describe}\n',
    '"describe"\n',
    'null\n',
    '[]\n',
    '{"type":""}\n',
    '{"type":42}\n',
    '{"type":"x","data":"y"}\n',
    '{"type":"x","data_length":-5}\n',
    '{"type":"x","payload_length":-1}\n',
    '{"type":"x","payload_length":1.5}\n',
    '{"type":"x","payload_length":"100"}\n',
    '{"type":"x","payload_length":99999999999}\n',
    '{"type":"x","data_length":99999999}\n',
    '{"type":"x","data_length":5}\n{"a":',
    '{"type":"x","data_length":3}\n[1]',
    '{"type":"audio-chunk","payload_length":100}\nshort',
    `{"type":"${'x'.repeat(100)}"}\n`,
    `${'{"a":'.repeat(100)}1${'}'.repeat(100)}\n`,
    `{"type":"x","pad":"${'p'.repeat(20000)}"}\n`,
  ];
  for (const f of fixed) out.push({ name: JSON.stringify(f.slice(0, 40)), bytes: Buffer.from(f) });
  while (out.length < 200) {
    const kind = out.length % 4;
    const n = 1 + Math.floor(random() * 3000);
    const bytes = Buffer.alloc(n);
    for (let i = 0; i < n; i++) bytes[i] = Math.floor(random() * 256);
    if (kind === 0) bytes[Math.floor(n / 2)] = 0x0a; // garbage with a newline: a bad header line
    if (kind === 1) {
      // a valid header whose payload is garbage and cut short
      out.push({
        name: `truncated ${n}`,
        bytes: Buffer.concat([Buffer.from(`{"type":"audio-chunk","payload_length":${n + 10}}\n`), bytes]),
      });
      continue;
    }
    if (kind === 2) {
      out.push({
        name: `bad data ${n}`,
        bytes: Buffer.concat([Buffer.from(`{"type":"describe","data_length":${n}}\n`), bytes]),
      });
      continue;
    }
    out.push({ name: `garbage ${n}`, bytes });
  }
  return out;
}
