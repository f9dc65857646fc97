import test, { type TestFn } from 'ava';

/**
 * Marks a file's tests skipped for a missing component, saying so in ONE line on the console (ava shows a skip's
 * title only with --verbose): the project's rule for tests that need what a machine may lack (MNN, a toolchain,
 * a binary). The line starts with SKIP and names what is missing and how to get it. `on` is the file's typed
 * test function where it has one.
 */
export function skipWithLine(line: string, on: Pick<TestFn, 'skip'> = test): void {
  const text = line.startsWith('SKIP') ? line : `SKIP ${line}`;
  console.log(text);
  on.skip(text, () => {});
}
