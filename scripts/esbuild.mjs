// esbuild's native binary matches the CPU npm installed it for; a cross build (Yocto: target packages on an
// x86 build host) cannot run it, so esbuild-wasm, which runs wherever Node does, takes over.
// MNN_EDGE_ESBUILD=wasm forces it. Shared by the dashboard build and the agent bundle.
export async function loadEsbuild() {
  if (process.env.MNN_EDGE_ESBUILD !== 'wasm') {
    try {
      const native = await import('esbuild');
      await native.transform('', {});
      return native;
    } catch (err) {
      console.log(`native esbuild unusable here (${err.message.split('\n')[0]}); using esbuild-wasm`);
    }
  }
  return import('esbuild-wasm');
}
