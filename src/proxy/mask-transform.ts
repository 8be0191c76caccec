/**
 * The `mask` response transform (docs/proxies.md, Transforms): every match of the proxy's regular
 * expression has its capture group's characters replaced by one character. The expression is the
 * proxy author's and the text is the destination's, so a backtracking pattern (`^(a+)+$` over
 * `aaaa…b`) can run for hours: it runs in the reactor sandbox (a worker thread, ended at its
 * deadline), never on the thread that serves every tenant's requests.
 */
import type { RunOwner, Sandbox } from '../sandbox/sandbox.js';

/**
 * Runs in QuickJS; the `d` flag gives the capture group's span, counted in characters for the
 * replacement. Parts are joined once: appending to one string would copy it at every match.
 */
const MASK_CODE = `module.exports = async (req) => {
  const text = req.args, replacement = req.replacement, parts = [];
  let last = 0;
  for (const match of text.matchAll(new RegExp(req.expression, 'gd'))) {
    const span = match.indices && match.indices[1];
    if (span === undefined) continue;
    parts.push(text.slice(last, span[0]), replacement.repeat([...text.slice(span[0], span[1])].length));
    last = span[1];
  }
  parts.push(text.slice(last));
  return { body: parts.join('') };
};`;

/** The masked text, computed in the sandbox within its deadline (a ReactorError past it). */
export async function maskInSandbox(sandbox: Sandbox, owner: RunOwner, text: string, expression: string, replacement: string): Promise<string> {
  // The answer is the whole text again: room for it as JSON (at worst 6 bytes a character, `\\u0000`).
  const maxResultBytes = 6 * text.length + 1024;
  const run = await sandbox.run({
    code: MASK_CODE,
    req: { args: text, configuration: {}, expression, replacement },
    host: { bt: null, fetch: null },
    owner,
    limits: { maxResultBytes },
  });
  return (run.result as { body: string }).body;
}
