// MNN dlopen()s its GPU loaders by their unversioned names (libvulkan.so, libOpenCL.so). Debian and Ubuntu ship
// those names only in the -dev packages (libvulkan-dev, ocl-icd-opencl-dev); a board with just the runtimes
// (libvulkan1, ocl-icd-libopencl1, what the engine package recommends) would have the backends built in and never
// usable. So the engine package carries the two names as links to the runtimes' sonames in a private directory,
// named in the RUNPATH of MNN's library (whose code calls dlopen) and of the addon (whose backend probe calls it):
// nothing lands on the default search path and nothing clashes with a -dev package. The Yocto recipe does the same
// (MNN_LOADER_DIR in mnn_git.bb). A board without the runtime gets a dangling link: dlopen fails, the probe says
// so, and the CPU serves.
import { mkdirSync, symlinkSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { DebArch } from './inputs.js';

/** Beside MNN's libraries in the package's private directory. */
export const GPU_LOADERS_SUBDIR = 'gpu-loaders';

const TRIPLETS: Record<DebArch, string> = { amd64: 'x86_64-linux-gnu', arm64: 'aarch64-linux-gnu' };

/** The name MNN opens, and the runtime's soname in Debian's multiarch directory. */
const LOADERS: Record<string, [name: string, soname: string]> = {
  vulkan: ['libvulkan.so', 'libvulkan.so.1'],
  opencl: ['libOpenCL.so', 'libOpenCL.so.1'],
};

/** Links for the GPU backends built into this MNN, placed under `root`; returns their paths on the board. */
export function placeGpuLoaderLinks(
  root: string,
  libDir: string,
  arch: DebArch,
  backends: string[],
): string[] {
  const dir = join(libDir, GPU_LOADERS_SUBDIR);
  const links: string[] = [];
  for (const backend of backends) {
    const loader = LOADERS[backend];
    if (loader === undefined) continue;
    const [name, soname] = loader;
    mkdirSync(join(root, dir), { recursive: true });
    // Relative, as Debian policy wants for a link within /usr.
    symlinkSync(relative(dir, `/usr/lib/${TRIPLETS[arch]}/${soname}`), join(root, dir, name));
    links.push(join(dir, name));
  }
  return links;
}
