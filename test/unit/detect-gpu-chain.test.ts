import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import test from 'ava';
import { applyEngineBackends, type BackendAvailability, detect } from '../../agent/detect/index.js';

// Board trees built on disk (real stat, real symlinks): the chain is about which files exist under which name.

const LIB = '/usr/lib/x86_64-linux-gnu';

function board(files: Record<string, string | { link: string }>): string {
  const root = mkdtempSync(join(tmpdir(), 'gpu-chain-'));
  mkdirSync(join(root, 'proc'), { recursive: true });
  writeFileSync(join(root, 'proc/cpuinfo'), 'processor\t: 0\nvendor_id\t: GenuineIntel\nflags\t\t: avx2\n');
  for (const [path, content] of Object.entries(files)) {
    const full = join(root, path);
    mkdirSync(dirname(full), { recursive: true });
    if (typeof content === 'string') writeFileSync(full, content);
    else symlinkSync(content.link, full);
  }
  return root;
}

const lavapipe = {
  '/usr/share/vulkan/icd.d/lvp_icd.x86_64.json': JSON.stringify({
    file_format_version: '1.0.0',
    ICD: { library_path: `${LIB}/libvulkan_lvp.so`, api_version: '1.3.230' },
  }),
  [`${LIB}/libvulkan_lvp.so`]: 'elf',
  [`${LIB}/libvulkan.so.1.3.239`]: 'elf',
  [`${LIB}/libvulkan.so.1`]: { link: 'libvulkan.so.1.3.239' },
};
const pocl = {
  '/etc/OpenCL/vendors/pocl.icd': 'libpocl.so.2\n',
  [`${LIB}/libpocl.so.2`]: 'elf',
  [`${LIB}/libOpenCL.so.1`]: 'elf',
  [`${LIB}/libOpenCL.so`]: { link: 'libOpenCL.so.1' },
};

function backend(root: string, name: 'vulkan' | 'opencl', env = {}): BackendAvailability {
  try {
    return detect({ root, env }).backends.find((b) => b.backend === name)!;
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
}

const status = (b: BackendAvailability) => Object.fromEntries(b.steps!.map((s) => [s.step, s.status]));

test('lavapipe with the loader symlink: vulkan usable as a software device, no device node needed', (t) => {
  const b = backend(board({ ...lavapipe, [`${LIB}/libvulkan.so`]: { link: 'libvulkan.so.1' } }), 'vulkan');
  t.true(b.usable);
  t.is(b.deviceKind, 'software');
  t.deepEqual(status(b), {
    'device-node': 'skip',
    icd: 'ok',
    loader: 'ok',
    'device-kind': 'ok',
    'compiled-in': 'unchecked',
    'init-probe': 'unchecked',
  });
  t.regex(b.steps![1]!.detail, /lavapipe .*lvp_icd\.x86_64\.json/);
});

test('libvulkan.so.1 without the unversioned name: the loader step fails and says which package fixes it', (t) => {
  const b = backend(board(lavapipe), 'vulkan');
  t.false(b.usable);
  t.is(
    b.reasons[0],
    `Vulkan loader present as libvulkan.so.1 only (${LIB}/libvulkan.so.1); MNN loads libvulkan.so — install the loader's development symlink (libvulkan-dev)`,
  );
});

test('VK_ICD_FILENAMES pointing at nothing: the registration step is the reason', (t) => {
  const b = backend(board({ ...lavapipe, [`${LIB}/libvulkan.so`]: { link: 'libvulkan.so.1' } }), 'vulkan', {
    VK_ICD_FILENAMES: '/nonexistent/icd.json',
  });
  t.false(b.usable);
  t.is(
    b.reasons[0],
    'VK_ICD_FILENAMES=/nonexistent/icd.json points at nothing usable (/nonexistent/icd.json)',
  );
  t.is(status(b)['device-node'], 'skip');
});

test('pocl only: OpenCL unusable because its only device is CPU-typed; compiled in is a separate, passing step', (t) => {
  const root = board(pocl);
  try {
    const caps = detect({ root, env: {} });
    const before = caps.backends.find((b) => b.backend === 'opencl')!;
    t.false(before.usable);
    t.regex(
      before.reasons[0]!,
      /^no OpenCL GPU device: the only driver registered \(pocl .*\) offers a CPU device/,
    );
    const after = applyEngineBackends(
      { ...caps, engineBackends: null },
      ['cpu', 'opencl', 'vulkan'],
      [
        {
          name: 'opencl',
          compiledIn: true,
          deviceKind: 'software',
          steps: [
            {
              step: 'device-kind',
              status: 'fail',
              detail:
                'no OpenCL GPU device: the only platform "Portable Computing Language" offers a CPU device',
              evidence: [],
            },
          ],
        },
      ],
    ).backends.find((b) => b.backend === 'opencl')!;
    t.false(after.usable);
    t.is(
      after.reasons[0],
      'compiled in, but no OpenCL GPU device: the only platform "Portable Computing Language" offers a CPU device',
    );
    t.is(after.steps!.find((s) => s.step === 'compiled-in')!.status, 'ok');
    t.notRegex(after.reasons.join(' '), /not compiled|built without/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('an engine without Vulkan: "MNN built without vulkan" is the compiled-in step, not a device problem', (t) => {
  const root = board({ ...lavapipe, [`${LIB}/libvulkan.so`]: { link: 'libvulkan.so.1' } });
  try {
    const caps = detect({ root, env: {}, engineBackends: ['cpu'] });
    const b = caps.backends.find((x) => x.backend === 'vulkan')!;
    t.false(b.usable);
    t.regex(b.reasons[0]!, /^MNN built without vulkan \(rebuild MNN with -DMNN_VULKAN=ON\)/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a Mali GPU node with its driver registered: a GPU device; a hardware ICD without its node does not count', (t) => {
  const mali = {
    '/dev/mali0': '',
    '/etc/OpenCL/vendors/mali.icd': 'libmali.so\n',
    [`${LIB}/libmali.so`]: 'elf',
    [`${LIB}/libOpenCL.so`]: { link: 'libmali.so' },
  };
  const b = backend(board(mali), 'opencl');
  t.true(b.usable);
  t.is(b.deviceKind, 'gpu');
  const noNode = { ...mali } as Record<string, string | { link: string }>;
  delete noNode['/dev/mali0'];
  const c = backend(board(noNode), 'opencl');
  t.false(c.usable);
  t.regex(c.reasons[0]!, /^no GPU device node/);
});

test('a GPU node but no OpenCL userspace at all: "no OpenCL library"', (t) => {
  const b = backend(board({ '/dev/mali0': '' }), 'opencl');
  t.false(b.usable);
  t.regex(b.reasons[0]!, /present \(\/dev\/mali0\) but no OpenCL library/);
});
