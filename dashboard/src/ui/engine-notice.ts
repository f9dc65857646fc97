import { notice, sentence } from './dom.js';

/** The engine-missing banner: what is wrong, then how to fix it (the same words the CLI and the log use). */
export function engineNotice(
  engine: { reason: string; fix?: string },
  consequence: string,
  testId = 'engine-unavailable',
): HTMLElement {
  const reason = sentence(engine.reason.replace(/\.?\s*$/, '.'));
  return notice(
    'warn',
    'Engine not available',
    `${reason} ${consequence} To fix: ${engine.fix ?? 'install MNN and build the engine addon (npm run build:engine).'}`,
    testId,
  );
}
