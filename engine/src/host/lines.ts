// Lines of a child's stdout/stderr (MNN's own prints). node:readline would do, but it pulls the whole readline
// stack into the idle daemon for this one use (bench/idle). A line longer than maxChars (a binary blob printed by
// mistake) is delivered in pieces so that memory stays bounded.
import { StringDecoder } from 'node:string_decoder';

export function onLines(
  stream: NodeJS.ReadableStream,
  listener: (line: string) => void,
  maxChars = 8192,
): void {
  const decoder = new StringDecoder('utf8');
  let pending = '';
  const take = (text: string) => {
    pending += text;
    let nl = pending.indexOf('\n');
    while (nl >= 0) {
      listener(pending.slice(0, pending[nl - 1] === '\r' ? nl - 1 : nl));
      pending = pending.slice(nl + 1);
      nl = pending.indexOf('\n');
    }
    while (pending.length > maxChars) {
      listener(pending.slice(0, maxChars));
      pending = pending.slice(maxChars);
    }
  };
  stream.on('data', (chunk: Buffer | string) =>
    take(typeof chunk === 'string' ? chunk : decoder.write(chunk)),
  );
  stream.on('end', () => {
    take(decoder.end());
    if (pending.length > 0) listener(pending);
    pending = '';
  });
}
