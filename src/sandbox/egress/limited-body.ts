/** Reading a fetch response body within a size limit (reactor `fetch`, the proxy's supplied fetch). */

/** The body's bytes, or 'over' once it passes `maxBytes` (the stream is then cancelled). A failed read throws the stream's error. */
export async function readLimitedBody(body: ReadableStream<Uint8Array> | null, maxBytes: number): Promise<Buffer | 'over'> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (body === null) return Buffer.alloc(0);
  const reader = body.getReader();
  for (;;) {
    const step = await reader.read();
    if (step.done) return Buffer.concat(chunks);
    size += step.value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      return 'over';
    }
    chunks.push(step.value);
  }
}
