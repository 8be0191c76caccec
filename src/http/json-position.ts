/**
 * Where a JSON text stops being valid, for an error message that points at it. V8's own messages
 * quote the input around the error ("Unexpected token 'a', "abc…" is not valid JSON"), which would
 * put request data in a response, and omit the position in some cases; this scanner only runs after
 * JSON.parse failed, so its speed does not matter.
 */

/** The offset of the first character that makes `text` invalid JSON (text.length at a premature end), or -1 when it is valid. */
export function jsonErrorOffset(text: string): number {
  const stack: string[] = [];
  let i = 0;
  let mode: 'value' | 'key' | 'after' = 'value';
  const skipSpace = () => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };
  const scanString = (): boolean => {
    i++;
    while (i < text.length) {
      const c = text[i]!;
      if (c === '"') {
        i++;
        return true;
      }
      if (c === '\\') {
        const e = text[i + 1];
        if (e === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) return false;
          i += 6;
          continue;
        }
        if (e === undefined || !'"\\/bfnrt'.includes(e)) return false;
        i += 2;
        continue;
      }
      if (c < ' ') return false;
      i++;
    }
    return false;
  };
  const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
  for (;;) {
    skipSpace();
    const c = text[i];
    if (mode === 'value') {
      if (c === '{' || c === '[') {
        i++;
        skipSpace();
        if (text[i] === (c === '{' ? '}' : ']')) {
          i++;
          mode = 'after';
        } else {
          stack.push(c);
          mode = c === '{' ? 'key' : 'value';
        }
      } else if (c === '"') {
        if (!scanString()) return i;
        mode = 'after';
      } else if (c === 't' || c === 'f' || c === 'n') {
        const word = c === 't' ? 'true' : c === 'f' ? 'false' : 'null';
        if (!text.startsWith(word, i)) return i;
        i += word.length;
        mode = 'after';
      } else {
        NUMBER.lastIndex = i;
        if (!NUMBER.test(text)) return i;
        i = NUMBER.lastIndex;
        mode = 'after';
      }
    } else if (mode === 'key') {
      if (c !== '"' || !scanString()) return i;
      skipSpace();
      if (text[i] !== ':') return i;
      i++;
      mode = 'value';
    } else {
      const top = stack[stack.length - 1];
      if (top === undefined) return i === text.length ? -1 : i;
      if (c === ',') {
        i++;
        mode = top === '{' ? 'key' : 'value';
      } else if (c === (top === '{' ? '}' : ']')) {
        stack.pop();
        i++;
      } else {
        return i;
      }
    }
  }
}

/** The message for a body JSON.parse refused: where it goes wrong, by line, column and offset; never its content. */
export function describeJsonError(text: string): string {
  const offset = jsonErrorOffset(text);
  if (offset < 0 || offset >= text.length) return `is not valid JSON: it ends before the document is complete (offset ${text.length})`;
  const before = text.slice(0, offset);
  const line = before.split('\n').length;
  const column = offset - before.lastIndexOf('\n');
  return `is not valid JSON: unexpected character at line ${line}, column ${column} (offset ${offset})`;
}
