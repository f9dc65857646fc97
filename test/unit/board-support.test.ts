import { join } from 'node:path';
import test from 'ava';
import { detect } from '../../agent/detect/detect.js';
import {
  identifySoc,
  jetpackForL4t,
  matchProfile,
  profileById,
  profiles,
} from '../../board-support/index.js';
import type { Fact, IdentityFacts } from '../../board-support/types.js';
import { MNN_BACKENDS } from '../../lib/capabilities.js';
import { socFixturesDir } from '../helpers/paths.js';

const fact = (value: string, path = '/sys/firmware/devicetree/base/compatible'): Fact => ({
  value,
  evidence: { kind: 'file', path, value },
});

function facts(over: Partial<IdentityFacts>): IdentityFacts {
  return {
    architecture: 'aarch64',
    compatible: [],
    dtModel: null,
    soc0: { machine: null, family: null, socId: null, revision: null },
    cpu: { modelName: null, uarch: null, marchid: null, vendorId: null, part: null },
    tegraRelease: null,
    ...over,
  };
}

test('one profile per family, unique ids, every profile fully described', (t) => {
  t.deepEqual(
    profiles.map((p) => p.id),
    [
      'qcs9075',
      'qcs6490',
      'rk3588',
      'jetson-orin',
      'spacemit-k1',
      'spacemit-k3',
      'riscv-generic',
      'arm64-generic',
      'x86-64',
    ],
  );
  for (const p of profiles) {
    t.true(p.matchRules.length > 0, p.id);
    t.true(
      p.backends.some((b) => b.backend === 'cpu'),
      p.id,
    );
    t.true(
      p.backends.every((b) => MNN_BACKENDS.includes(b.backend) && b.condition.length > 0),
      p.id,
    );
    t.true(p.threads.advice.length > 0, p.id);
    for (const prior of p.priors) t.regex(prior.source, /seed document/, p.id);
  }
});

test('published priors are carried with their numbers and source text', (t) => {
  const q = profileById('qcs9075')!;
  t.deepEqual(
    q.priors.map((p) => [p.backend, p.metrics]),
    [
      ['cpu', { vision_s: 0.43, prefill_tok_s: 78.15, decode_tok_s: 33.3 }],
      ['hexagon', { vision_s: 0.39, prefill_tok_s: 59.03, decode_tok_s: 15.27 }],
      ['opencl', { vision_s: 27.68, prefill_tok_s: 3.3, decode_tok_s: 4.09 }],
    ],
  );
  t.true(q.priors.every((p) => p.engine === 'MNN 3.6.1' && p.model === 'Qwen3.5-2B W4A16'));
  const k3 = profileById('spacemit-k3')!.priors[0]!;
  t.deepEqual(k3.metrics, { prefill_tok_s: 85.6, decode_tok_s: 17.68 });
  t.is(k3.threads, 8);
  t.is(k3.model, 'Qwen3.5-2B W4B64');
});

test('Qualcomm identity: compatible strings alone still find the family, soc0 names the die', (t) => {
  const ubuntu = identifySoc(
    facts({ compatible: [fact('qcom,qcs9075-iq-9075-evk'), fact('qcom,qcs9075'), fact('qcom,sa8775p')] }),
  );
  t.is(ubuntu?.profile.id, 'qcs9075');
  t.is(ubuntu?.soc.name.value, 'QCS9075');
  const rb3 = identifySoc(facts({ compatible: [fact('qcom,qcs6490-rb3gen2'), fact('qcom,qcm6490')] }));
  t.is(rb3?.profile.id, 'qcs6490');
  t.is(rb3?.soc.name.value, 'QCM6490');
  const dragon = identifySoc(
    facts({
      soc0: {
        machine: null,
        family: fact('Snapdragon'),
        socId: fact('498', '/sys/devices/soc0/soc_id'),
        revision: null,
      },
    }),
  );
  t.is(dragon?.soc.name.value, 'QCS6490');
  t.deepEqual(dragon?.soc.name.evidence[1], { kind: 'table', key: 'soc_id 498', profile: 'qcs6490' });
});

test('Jetson modules by prefix (-super), K1 by mainline compatible or by core, RK3588S', (t) => {
  t.is(
    identifySoc(facts({ compatible: [fact('nvidia,p3768-0000+p3767-0005-super'), fact('nvidia,tegra234')] }))
      ?.profile.id,
    'jetson-orin',
  );
  t.is(
    identifySoc(
      facts({ compatible: [fact('bananapi,bpi-f3'), fact('spacemit,k1')], architecture: 'riscv64' }),
    )?.profile.id,
    'spacemit-k1',
  );
  t.is(
    identifySoc(
      facts({
        architecture: 'riscv64',
        cpu: {
          modelName: null,
          uarch: null,
          marchid: fact('0x8000000058000001', '/proc/cpuinfo'),
          vendorId: null,
          part: null,
        },
      }),
    )?.profile.id,
    'spacemit-k1',
  );
  const s = identifySoc(facts({ compatible: [fact('radxa,rock-5c'), fact('rockchip,rk3588s')] }));
  t.is(s?.profile.id, 'rk3588');
  t.is(s?.soc.name.value, 'RK3588S');
  t.is(identifySoc(facts({ architecture: 'armv7' })), null);
});

test('L4T to JetPack', (t) => {
  t.is(jetpackForL4t('R36.4.7'), '6.2');
  t.is(jetpackForL4t('R36.4.0'), '6.1');
  t.is(jetpackForL4t('R36.3'), '6.0');
  t.is(jetpackForL4t('R35.5.0'), '5.1.x');
  t.is(jetpackForL4t('R32.7.1'), null);
  t.is(jetpackForL4t('junk'), null);
});

test('matchProfile: detected family, else the generic profile for the architecture', (t) => {
  const caps = detect({ root: join(socFixturesDir, 'qcom-qcs6490-rb3gen2') });
  const p = matchProfile(caps)!;
  t.is(p.id, 'qcs6490');
  t.is(p.threads.placement, 'big-cluster-first');
  // The advice and the detected clusters agree: the fastest cluster is the A78 prime core.
  t.is(caps.cpu.clusters[0]!.core, 'Cortex-A78');
  const unknownSoc = { ...caps, soc: { ...caps.soc, family: { value: null, evidence: [] } } };
  t.is(matchProfile(unknownSoc)?.id, 'arm64-generic');
  const noArch = { ...unknownSoc, cpu: { ...caps.cpu, architecture: { value: null, evidence: [] } } };
  t.is(matchProfile(noArch), null);
});
