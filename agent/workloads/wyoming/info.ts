// The `info` answer to `describe`: what this board serves right now, read from the voice roles at each request
// so it follows placement (a model installed, swapped or failed shows at the next describe). A role nothing
// serves is left out rather than announced as not installed: Home Assistant would offer it and fail later.
import type { VoiceRoles } from '../voice/service.js';

export interface InfoOptions {
  /** Languages announced for speech-to-text and conversation (the packages do not declare theirs). */
  languages: readonly string[];
  agentVersion: string;
}

const MNN = { name: 'Alibaba MNN (engine), served by mnn-edge', url: 'https://github.com/alibaba/MNN' };
const ESPEAK = { name: 'eSpeak NG', url: 'https://github.com/espeak-ng/espeak-ng' };

type Artifact = {
  name: string;
  attribution: { name: string; url: string };
  installed: boolean;
  description: string;
  version: string | null;
};

function program(name: string, description: string, agentVersion: string): Artifact {
  return { name, attribution: MNN, installed: true, description, version: agentVersion };
}

/** The `data` of the info event. */
export function buildInfo(roles: VoiceRoles, o: InfoOptions): Record<string, unknown> {
  const languages = [...o.languages];
  const info: Record<string, unknown> = {};
  if (roles.asr) {
    const m = roles.asr;
    info['asr'] = [
      {
        ...program('mnn-edge-asr', `Speech to text on the board (slot ${m.slot})`, o.agentVersion),
        models: [
          {
            name: m.modelId,
            attribution: MNN,
            installed: true,
            description: `${m.modelId} on ${m.slot}`,
            version: m.version ?? null,
            languages,
          },
        ],
        supports_transcript_streaming: true,
      },
    ];
  }
  if (roles.tts) {
    const t = roles.tts;
    const voice =
      t.kind === 'talker'
        ? {
            name: t.modelId,
            attribution: MNN,
            installed: true,
            description: `${t.modelId} talker on ${t.slot}`,
            version: t.version ?? null,
            languages,
          }
        : {
            name: t.voice,
            attribution: ESPEAK,
            installed: true,
            description: `espeak-ng voice ${t.voice} (no speech model placed on voice.tts)`,
            version: null,
            // espeak-ng voices are named by their language (en-us, de, fr-fr).
            languages: [t.voice],
          };
    info['tts'] = [
      {
        ...(t.kind === 'talker'
          ? program('mnn-edge-tts', `Text to speech on the board (slot ${t.slot})`, o.agentVersion)
          : {
              name: 'espeak-ng',
              attribution: ESPEAK,
              installed: true,
              description: 'Text to speech with espeak-ng (formant synthesis, no model)',
              version: null,
            }),
        voices: [voice],
        supports_synthesize_streaming: true,
      },
    ];
  }
  if (roles.reply) {
    const m = roles.reply;
    info['handle'] = [
      {
        ...program(
          'mnn-edge-conversation',
          `Conversation with the board's language model (slot ${m.slot})`,
          o.agentVersion,
        ),
        models: [
          {
            name: m.modelId,
            attribution: MNN,
            installed: true,
            description: `${m.modelId} on ${m.slot}, with history per conversation`,
            version: m.version ?? null,
            languages,
          },
        ],
        supports_handled_streaming: true,
        supports_home_control: false,
      },
    ];
  }
  if (roles.wake) {
    const w = roles.wake;
    info['wake'] = [
      {
        ...program(
          'mnn-edge-wake',
          `Wake-word detection on the board (slot ${w.slot}, ${w.modelId})`,
          o.agentVersion,
        ),
        models: w.keywords.map((k) => ({
          name: k.name,
          attribution: MNN,
          installed: true,
          description: `${k.phrase ?? k.name} (${w.modelId}, threshold ${k.threshold})`,
          version: w.version ?? null,
          languages: w.languages,
          phrase: k.phrase ?? k.name.replace(/_/g, ' '),
        })),
      },
    ];
  }
  return info;
}
