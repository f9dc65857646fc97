import { existsSync, mkdtempSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import test from 'ava';
import { GPU_LOADERS_SUBDIR, placeGpuLoaderLinks } from '../../scripts/deb/gpu-loaders.js';

// The engine package's links from the names MNN dlopens to the sonames Debian's runtime packages install.

const LIB_DIR = '/usr/lib/mnn-edge/engine';

test('arm64 with OpenCL and Vulkan: relative links into the multiarch directory, one per backend', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'gpu-loaders-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const links = placeGpuLoaderLinks(root, LIB_DIR, 'arm64', ['cpu', 'opencl', 'vulkan']);
  t.deepEqual(links, [
    `${LIB_DIR}/${GPU_LOADERS_SUBDIR}/libOpenCL.so`,
    `${LIB_DIR}/${GPU_LOADERS_SUBDIR}/libvulkan.so`,
  ]);
  const onBoard = (link: string) => resolve(dirname(link), readlinkSync(join(root, link)));
  t.is(readlinkSync(join(root, links[1]!)), '../../../aarch64-linux-gnu/libvulkan.so.1');
  t.is(onBoard(links[0]!), '/usr/lib/aarch64-linux-gnu/libOpenCL.so.1');
  t.is(onBoard(links[1]!), '/usr/lib/aarch64-linux-gnu/libvulkan.so.1');
});

test('amd64 with OpenCL only links libOpenCL.so; a CPU-only MNN gets no directory at all', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'gpu-loaders-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const links = placeGpuLoaderLinks(root, LIB_DIR, 'amd64', ['cpu', 'opencl']);
  t.deepEqual(links, [`${LIB_DIR}/${GPU_LOADERS_SUBDIR}/libOpenCL.so`]);
  t.is(readlinkSync(join(root, links[0]!)), '../../../x86_64-linux-gnu/libOpenCL.so.1');
  const cpu = mkdtempSync(join(tmpdir(), 'gpu-loaders-'));
  t.teardown(() => rmSync(cpu, { recursive: true, force: true }));
  t.deepEqual(placeGpuLoaderLinks(cpu, LIB_DIR, 'arm64', ['cpu']), []);
  t.false(existsSync(join(cpu, LIB_DIR, GPU_LOADERS_SUBDIR)));
});
