// A fetch for the MCP client that stops reading an answer past a size: a server (or whatever sits at its URL)
// sending megabytes must cost the board a bounded amount of memory, whatever the result's text limit cuts later.
// Only answers to POSTs are counted: they carry one request's response each, while the GET stream lives as long
// as the session and carries only notifications.

export class ResponseTooLarge extends Error {
  constructor(readonly limitBytes: number) {
    super(`its answer was over ${limitBytes} bytes, the limit`);
    this.name = 'ResponseTooLarge';
  }
}

function countingBody(body: ReadableStream<Uint8Array>, limitBytes: number, onOverflow: () => void) {
  let seen = 0;
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        seen += chunk.byteLength;
        if (seen > limitBytes) {
          onOverflow();
          controller.error(new ResponseTooLarge(limitBytes));
          return;
        }
        controller.enqueue(chunk);
      },
    }),
  );
}

export function boundedFetch(
  limitBytes: number,
  onOverflow: () => void,
  inner: typeof fetch = fetch,
): (url: string | URL, init?: RequestInit) => Promise<Response> {
  return async (url, init) => {
    const response = await inner(url, init);
    if ((init?.method ?? 'GET').toUpperCase() !== 'POST' || response.body === null) return response;
    const declared = Number(response.headers.get('content-length'));
    if (Number.isFinite(declared) && declared > limitBytes) {
      onOverflow();
      await response.body.cancel().catch(() => undefined);
      throw new ResponseTooLarge(limitBytes);
    }
    return new Response(countingBody(response.body, limitBytes, onOverflow), {
      status: response.status,
      statusText: response.statusText,
      headers: response.headers,
    });
  };
}
