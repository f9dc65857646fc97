import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { repoRoot } from '../helpers/paths.js';

// The addon's TokenChannel (engine/native/token_channel.h) on its own: which tokens wake the JS thread, with the
// decode times handed in, so the rule is checked without a clock. Built here with the machine's C++ compiler.

const hasCompiler = spawnSync('c++', ['--version']).status === 0;

// Each line: the wake pattern of one generation, '1' for a Put or Finish that wakes JS, '0' for one that holds.
// JS takes and acknowledges each batch as soon as it is woken.
const DRIVER = String.raw`
#include "token_channel.h"
#include <cstdio>
#include <string>
#include <vector>
using mnn_edge::TokenChannel;
static void run(const char* name, double holdUs, const std::vector<double>& times) {
  TokenChannel ch(64, holdUs);
  std::string wakes;
  for (size_t i = 0; i < times.size(); i++) {
    bool wake = ch.Put("x", times[i]);
    wakes += wake ? '1' : '0';
    if (wake) ch.Ack(ch.Take().tokens);
  }
  wakes += ch.Finish("", "stop") ? '1' : '0';
  std::printf("%s %s\n", name, wakes.c_str());
}
int main() {
  // A board's decoder, 25 ms a token, 10 ms hold: every token goes at once (the next is never due in time).
  run("slow", 10000, {0, 25000, 50000, 75000});
  // A fast decoder, 1 ms a token: held while the next is due within the hold, then handed over together.
  run("fast", 10000, {0, 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000, 10000, 11000});
  // No hold: each token wakes JS when no delivery is pending.
  run("nohold", 0, {0, 25000, 50000});
  // Steps of 4 ms: held while the next is due before the hold's 10 ms from the batch's first token.
  run("mid", 10000, {0, 4000, 8000, 12000, 16000, 20000});
  return 0;
}
`;

test('token channel: a token is held only while the next one is due within the hold', (t) => {
  if (!hasCompiler) {
    t.pass('no C++ compiler on this machine');
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), 'mnn-edge-token-channel-'));
  try {
    writeFileSync(join(dir, 'driver.cc'), DRIVER);
    const bin = join(dir, 'driver');
    execFileSync('c++', [
      '-std=c++17',
      '-O0',
      '-pthread',
      `-I${join(repoRoot, 'engine', 'native')}`,
      join(dir, 'driver.cc'),
      '-o',
      bin,
    ]);
    const lines = Object.fromEntries(
      execFileSync(bin, { encoding: 'utf8' })
        .trim()
        .split('\n')
        .map((l) => l.split(' ') as [string, string]),
    );
    // The first token always wakes. A board's decoder: each token goes at once; the old rule held every other one
    // for a whole 25 ms step ('10101').
    t.is(lines['slow'], '11111');
    // 1 ms steps: tokens 2-10 (1-9 ms) held, the next being due before 1 + 10 ms; token 11 (10 ms) hands them over
    // (the old rule held it too, till token 12); token 12 starts a batch, which the end hands over.
    t.is(lines['fast'], '1000000000101');
    t.is(lines['nohold'], '1111');
    // 4 ms steps: tokens at 4 and 8 ms held (next due at 8, 12 < 14); the one at 12 ms goes with them (next at
    // 16 ≥ 14: the old rule held it till 16 ms, '1000101'); 16 and 20 ms held, then the end.
    t.is(lines['mid'], '1001001');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
