/** Lines of a readable stream (standard input), without their line ends. */
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

export async function* readLines(input: Readable): AsyncIterable<string> {
  const reader = createInterface({ input, crlfDelay: Infinity, terminal: false });
  try {
    for await (const line of reader) yield line;
  } finally {
    reader.close();
  }
}
