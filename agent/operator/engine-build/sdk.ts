import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BuildHost } from './spec.js';

// Where vendor toolkits live on the boards' own distributions: the environment variable each vendor documents,
// then the default install directories of the QAIRT, Hexagon SDK and JetPack installers.

/** Children of `dir` whose names sort last first (newest SDK version first), or [] when `dir` is absent. */
function versionsIn(dir: string): string[] {
  try {
    return readdirSync(dir)
      .sort((a, b) => b.localeCompare(a, undefined, { numeric: true }))
      .map((n) => join(dir, n));
  } catch {
    return [];
  }
}

function firstWith(candidates: string[], marker: string): string | undefined {
  return candidates.find((c) => existsSync(join(c, marker)));
}

export function findBuildHost(env: NodeJS.ProcessEnv, root = '/'): BuildHost {
  const at = (p: string) => join(root, p);
  const qnnParents = [at('opt/qcom/aistack/qairt'), at('opt/qcom/aistack/qnn')];
  const hexagonParents = [at('local/mnt/workspace/Qualcomm/Hexagon_SDK'), at('opt/qcom/Hexagon_SDK')];
  const qnn = [...(env['QNN_SDK_ROOT'] ? [env['QNN_SDK_ROOT']] : []), ...qnnParents.flatMap(versionsIn)];
  const hexagon = [
    ...(env['HEXAGON_SDK_ROOT'] ? [env['HEXAGON_SDK_ROOT']] : []),
    ...hexagonParents.flatMap(versionsIn),
  ];
  const cuda = [
    ...(env['CUDA_HOME'] ? [env['CUDA_HOME']] : []),
    ...(env['CUDA_PATH'] ? [env['CUDA_PATH']] : []),
    at('usr/local/cuda'),
  ];
  // Messages name the variable and the vendor directories, not every version found below them.
  const named = (envName: string, parents: string[]) => [
    ...(env[envName] ? [`$${envName}=${env[envName]}`] : []),
    ...parents.map((p) => `${p}/*`),
  ];
  const host: BuildHost = {
    searched: {
      qnn: named('QNN_SDK_ROOT', qnnParents),
      hexagon: named('HEXAGON_SDK_ROOT', hexagonParents),
      cuda,
    },
  };
  const qnnSdkRoot = firstWith(qnn, 'include/QNN');
  const hexagonSdkRoot = firstWith(hexagon, 'build/cmake/hexagon_fun.cmake');
  const cudaRoot = firstWith(cuda, 'bin/nvcc');
  if (qnnSdkRoot) host.qnnSdkRoot = qnnSdkRoot;
  if (hexagonSdkRoot) host.hexagonSdkRoot = hexagonSdkRoot;
  if (cudaRoot) host.cudaRoot = cudaRoot;
  return host;
}
