import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { engineAvailability, unavailableMessage, WakePipeline } from '../../../engine/index.js';
import { decodeAudioFile, ffmpegPath } from '../../../lib/audio/decode-file.js';
import { MnnEdgeError } from '../../../lib/errors.js';
import { modelsConfigOf, storeLimitsOf } from '../../../models/config.js';
import { ModelStore, parseRef } from '../../../models/index.js';
import { isWakeLayout, readWakePackage, type WakePackageLayout } from '../../../models/wake-package.js';
import type { AgentConfig } from '../../config/schema.js';
import type { SlotsConfig } from '../../config/sections/slots.js';
import { openStore } from '../../store/database.js';
import { resolveVoiceConfig } from '../../workloads/config.js';
import { keywordSettings, type ResolvedKeyword } from '../../workloads/wake/model.js';
import { listAudioFiles, type ScanReport, scanFiles } from '../../workloads/wake/scan.js';
import { type ParsedArgs, parseArgs, stringFlag, UsageError } from '../common/args.js';
import type { CliIo, Command } from '../common/command.js';
import { configFromFlags } from './config.js';

// `mnn-edge wake scan FILE|DIR…`: a wake-word package over the user's own recordings, through the board's
// streaming path (agent/workloads/wake/scan.ts) with the trigger rules the board would use (the package's
// defaults under the configuration's voice.wake.keywords), so a user can see how often their TV or their own
// voice wakes the board before it is on the shelf.

const USAGE = `mnn-edge wake scan FILE|DIR… [--keyword ID[@VERSION]|DIR] [--json] [--data-dir DIR] [--config FILE]
  FILE|DIR: audio files (WAV of any PCM width, rate and channel count; OGG, FLAC, MP3, Opus… with ffmpeg);
            a directory is walked for audio files. They are heard one after another as one stream.
  --keyword: the wake package: an installed model id, or a package directory. Default: the model on
             slots.voice.wake, else the one wake package installed.`;

interface Detector {
  label: string;
  layout: WakePackageLayout;
}

function packageFromDir(dir: string): Detector {
  const names = readdirSync(dir);
  if (!isWakeLayout(names))
    throw new MnnEdgeError(
      'EINVAL',
      `${dir} is not a wake-word package: it needs melspectrogram.mnn, embedding_model.mnn and a keyword head`,
    );
  return { label: dir, layout: readWakePackage(dir, names) };
}

/** The package to scan with: --keyword (a directory or an installed id), else what the board would use. */
function resolveDetector(wanted: string | undefined, config: AgentConfig): Detector {
  if (wanted !== undefined && existsSync(wanted) && statSync(wanted).isDirectory())
    return packageFromDir(resolve(wanted));
  const { dataDir } = config;
  const slots = config['slots'] as SlotsConfig | undefined;
  const db = openStore(join(dataDir, 'agent.db'));
  const { store } = ModelStore.open({ dataDir, db, limits: storeLimitsOf(modelsConfigOf(config['models'])) });
  try {
    const wakes = store.list().filter((p) => p.task === 'wake');
    let pick = undefined as (typeof wakes)[number] | undefined;
    if (wanted !== undefined) {
      const ref = wanted.includes('@') ? parseRef(wanted) : undefined;
      pick = ref ? store.get(ref) : store.latest(wanted);
      if (!pick)
        throw new MnnEdgeError(
          'ENOENT',
          `No wake-word package ${wanted} installed (installed: ${wakes.map((p) => `${p.id}@${p.version}`).join(', ') || 'none'})`,
        );
    } else {
      const slot = slots?.['voice.wake'];
      if (slot && 'model' in slot)
        pick = slot.version ? store.get({ id: slot.model, version: slot.version }) : store.latest(slot.model);
      const ids = [...new Set(wakes.map((p) => p.id))];
      if (!pick && ids.length === 1) pick = store.latest(ids[0]!);
      if (!pick)
        throw new MnnEdgeError(
          'ENOMODEL',
          ids.length === 0
            ? 'No wake word: install the shipped one (mnn-edge models pull wake) or another wake-word package (mnn-edge models import <dir>), or give --keyword DIR'
            : `Several wake-word packages are installed (${ids.join(', ')}) and slots.voice.wake names none: give --keyword ID`,
        );
    }
    if (pick.task !== 'wake')
      throw new MnnEdgeError(
        'EINVAL',
        `${pick.id}@${pick.version} is a ${pick.task} model, not a wake-word package`,
      );
    const dir = store.packageDir(pick);
    return { label: `${pick.id}@${pick.version}`, layout: readWakePackage(dir, readdirSync(dir)) };
  } finally {
    store.close();
    db.close();
  }
}

function clock(seconds: number): string {
  const m = Math.floor(seconds / 60);
  const s = seconds - m * 60;
  return `${m}:${s.toFixed(2).padStart(5, '0')}`;
}

function summary(report: ScanReport, keywords: readonly ResolvedKeyword[]): string {
  const read = report.files.filter((f) => f.error === undefined).length;
  const lines = [
    `scanned ${report.hours.toFixed(3)} h (${report.seconds.toFixed(1)} s) in ${read} of ${report.files.length} files`,
  ];
  for (const k of keywords) {
    const n = report.detections.filter((d) => d.keyword === k.name).length;
    lines.push(
      `  ${k.name}: ${n} detection(s), ${(report.perHour[k.name] ?? 0).toFixed(2)} an hour (threshold ${k.threshold}, ${k.triggerFrames} frame(s), refractory ${k.refractoryMs} ms)`,
    );
  }
  return `${lines.join('\n')}\n`;
}

async function scan(args: ParsedArgs, io: CliIo): Promise<number> {
  const paths = args.positionals.slice(1);
  if (paths.length === 0) throw new UsageError('wake scan needs at least one audio file or directory');
  const json = args.flags['json'] === true;
  const { config } = configFromFlags(args, io.env);
  const detector = resolveDetector(stringFlag(args, 'keyword'), config);
  const availability = engineAvailability();
  if (!availability.available) throw new MnnEdgeError('ENOENGINE', unavailableMessage(availability.reason));
  const voice = resolveVoiceConfig(config['voice']);
  const keywords = keywordSettings(detector.layout.heads, voice.wake.keywords);
  const { files, missing } = listAudioFiles(paths);
  const ffmpeg = ffmpegPath(io.env);
  if (!ffmpeg && !json)
    io.stderr.write('note: ffmpeg is not installed: only WAV files can be read (apt install ffmpeg)\n');
  const { layout } = detector;
  const pipeline = await WakePipeline.load(
    {
      melspectrogram: layout.melspectrogram,
      embedding: layout.embedding,
      heads: layout.heads.map((h) => ({ name: h.name, path: h.path, input: h.input, output: h.output })),
    },
    { threads: 1 },
  );
  let report: ScanReport;
  try {
    if (!json) io.stdout.write(`wake package ${detector.label}: ${files.length} file(s)\n`);
    report = await scanFiles(files, { forward: (inputs) => pipeline.forward(inputs) }, keywords, {
      decode: (path) => decodeAudioFile(path, { ffmpeg: ffmpeg ?? null }),
      onDetection: (d) => {
        if (!json) io.stdout.write(`${d.file}  ${clock(d.atSeconds)}  ${d.keyword}  ${d.score.toFixed(3)}\n`);
      },
      onFile: (f) => {
        if (f.error !== undefined) io.stderr.write(`error: ${f.error}\n`);
      },
    });
  } finally {
    await pipeline.dispose();
  }
  for (const m of missing) io.stderr.write(`error: ${m.error}\n`);
  report.files.push(...missing);
  const failed = report.files.filter((f) => f.error !== undefined).length;
  if (json)
    io.stdout.write(
      `${JSON.stringify(
        {
          package: detector.label,
          ffmpeg: ffmpeg !== undefined,
          keywords: keywords.map(({ name, threshold, triggerFrames, refractoryMs }) => ({
            name,
            threshold,
            triggerFrames,
            refractoryMs,
          })),
          ...report,
        },
        null,
        2,
      )}\n`,
    );
  else io.stdout.write(summary(report, keywords));
  // 1: some file could not be read (the others were scanned and reported).
  return failed > 0 ? 1 : 0;
}

export const command: Command = {
  name: 'wake',
  summary: 'check a wake-word package on recordings: detections, hours scanned, detections an hour',
  usage: USAGE,
  async run(argv, io) {
    const args = parseArgs(argv, {
      values: ['keyword', 'data-dir', 'config'],
      booleans: ['json'],
    });
    const sub = args.positionals[0];
    if (sub === 'scan') return scan(args, io);
    throw new UsageError(sub === undefined ? 'missing subcommand (scan)' : `unknown subcommand '${sub}'`);
  },
};
