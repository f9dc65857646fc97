// Where the board's own voice session gets audio and sends it: ALSA through `arecord`/`aplay` (alsa-utils, on
// every image), or WAV files (tests, demos, batch transcription). The dashboard's audio travels over the
// WebSocket instead (agent/workloads/voice/socket.ts).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { writeFileDurable } from '../../common/durable-fs.js';
import { WorkloadError } from '../shared/errors.js';
import { floatToS16le, PcmToPipeline, PIPELINE_RATE, resample, toPipelineAudio } from './pcm.js';
import { encodeWavS16, parseWav } from './wav.js';
/** A WAV file of any supported encoding, converted and cut into chunks of `chunkMs`. */
export async function* wavFileSource(path, chunkMs = 100) {
    let bytes;
    try {
        bytes = readFileSync(path);
    }
    catch (err) {
        throw new WorkloadError('EAUDIO', `Cannot read WAV file ${path}: ${err.message}`);
    }
    const wav = parseWav(bytes);
    const samples = toPipelineAudio(wav.channels, wav.sampleRate);
    const step = Math.round((chunkMs * PIPELINE_RATE) / 1000);
    for (let at = 0; at < samples.length; at += step)
        yield samples.subarray(at, at + step);
}
function toolError(command, err) {
    return new WorkloadError('ETOOL', `Cannot run ${command}: ${err.message}${err.code === 'ENOENT' ? ' (install alsa-utils)' : ''}`);
}
/** The microphone through `arecord` (raw s16le at 16 kHz mono, so ALSA's plug layer does any conversion). */
export async function* arecordSource(device, signal, command = 'arecord') {
    const child = spawn(command, ['-q', '-D', device, '-t', 'raw', '-f', 'S16_LE', '-r', String(PIPELINE_RATE), '-c', '1'], {
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    const failed = new Promise((_, reject) => child.once('error', (err) => reject(toolError(command, err))));
    failed.catch(() => { });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => {
        stderr = (stderr + d).slice(-500);
    });
    const onAbort = () => child.kill('SIGTERM');
    signal.addEventListener('abort', onAbort, { once: true });
    const conv = new PcmToPipeline({ sampleRate: PIPELINE_RATE, channels: 1, format: 's16le' });
    let carry = Buffer.alloc(0);
    try {
        for await (const data of child.stdout) {
            const bytes = carry.length > 0 ? Buffer.concat([carry, data]) : data;
            const whole = bytes.length - (bytes.length % 2);
            carry = Buffer.from(bytes.subarray(whole));
            if (whole > 0)
                yield conv.push(bytes.subarray(0, whole));
        }
        const code = await Promise.race([
            failed,
            new Promise((resolve) => {
                if (child.exitCode !== null)
                    resolve(child.exitCode);
                else
                    child.once('close', resolve);
            }),
        ]);
        if (!signal.aborted && code !== 0) {
            throw new WorkloadError('ETOOL', `${command} -D ${device} exited with code ${code}: ${stderr.trim()}`);
        }
    }
    finally {
        signal.removeEventListener('abort', onAbort);
        if (child.exitCode === null)
            child.kill('SIGTERM');
    }
}
/** The speaker through `aplay`; one process per sample rate, restarted on flush so queued audio stops at once. */
export class AplaySink {
    #device;
    #command;
    #child;
    #rate = 0;
    constructor(device, command = 'aplay') {
        this.#device = device;
        this.#command = command;
    }
    write(samples, sampleRate) {
        if (!this.#child || this.#rate !== sampleRate) {
            this.#stop();
            this.#rate = sampleRate;
            const child = spawn(this.#command, ['-q', '-D', this.#device, '-t', 'raw', '-f', 'S16_LE', '-r', String(sampleRate), '-c', '1'], { stdio: ['pipe', 'ignore', 'pipe'] });
            child.on('error', () => { });
            child.stdin.on('error', () => { });
            this.#child = child;
        }
        this.#child.stdin.write(floatToS16le(samples));
    }
    flush() {
        this.#stop();
    }
    async close() {
        const child = this.#child;
        this.#child = undefined;
        if (!child)
            return;
        await new Promise((resolve) => {
            child.once('close', () => resolve());
            child.stdin.end();
        });
    }
    #stop() {
        this.#child?.kill('SIGKILL');
        this.#child = undefined;
    }
}
/** Collects the reply audio and writes one 16-bit WAV at close (durably), at the rate of the first chunk. */
export class WavFileSink {
    path;
    #chunks = [];
    #rate = 0;
    constructor(path) {
        this.path = path;
    }
    write(samples, sampleRate) {
        if (this.#rate === 0)
            this.#rate = sampleRate;
        this.#chunks.push(sampleRate === this.#rate ? samples.slice() : resample(samples, sampleRate, this.#rate));
    }
    /** A WAV keeps everything; barge-in only matters for live playback. */
    flush() { }
    async close() {
        const total = this.#chunks.reduce((n, c) => n + c.length, 0);
        const all = new Float32Array(total);
        let at = 0;
        for (const c of this.#chunks) {
            all.set(c, at);
            at += c.length;
        }
        writeFileDurable(this.path, encodeWavS16(floatToS16le(all), this.#rate || PIPELINE_RATE));
    }
}
//# sourceMappingURL=io.js.map