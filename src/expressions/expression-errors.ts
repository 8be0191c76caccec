/**
 * Every failure of an expression becomes a ValidationError naming the field. Its message is built here
 * from the kind of failure, never from liquid's message, which can quote the template (that may hold an
 * HMAC key).
 */
import { ValidationError } from '../errors/errors.js';
import { ExpressionFilterError } from './filter-values.js';
import { DISALLOWED_TAGS, MAX_TEMPLATE_LENGTH, RENDER_LIMIT_MS } from './liquid-instance.js';

function position(error: unknown): string {
  const token = (error as { token?: { getPosition?: () => [number, number] } } | null)?.token;
  if (typeof token?.getPosition !== 'function') return '';
  const [line, col] = token.getPosition();
  return ` (line ${line}, col ${col})`;
}

export function parseError(error: unknown, field: string): ValidationError {
  const message = error instanceof Error ? error.message : '';
  const where = position(error);
  let match: RegExpExecArray | null;
  if ((match = /^undefined filter: ([\w-]+)/.exec(message))) {
    return ValidationError.field(field, `uses the unknown filter '${match[1]}'${where}`);
  }
  if ((match = /^tag "([\w-]+)" not found/.exec(message))) {
    const name = match[1] ?? '';
    const reason = (DISALLOWED_TAGS as readonly string[]).includes(name) ? 'is not allowed' : 'is unknown';
    return ValidationError.field(field, `uses the tag '${name}', which ${reason}${where}`);
  }
  if (message.startsWith('parse length limit exceeded')) {
    return ValidationError.field(field, `is longer than ${MAX_TEMPLATE_LENGTH} characters`);
  }
  if (/not closed/.test(message)) return ValidationError.field(field, `has an unclosed tag or output${where}`);
  return ValidationError.field(field, `is not a valid expression${where}`);
}

export function renderError(error: unknown, field: string): ValidationError {
  // Liquid wraps a filter's error (RenderError.originalError), possibly more than once.
  let cause: unknown = error;
  for (let i = 0; i < 10 && cause instanceof Error; i++) {
    if (cause instanceof ExpressionFilterError) return ValidationError.field(field, cause.message);
    const message = cause.message;
    if (message.startsWith('template render limit exceeded')) {
      return ValidationError.field(field, `took longer than ${RENDER_LIMIT_MS} ms to render`);
    }
    if (message.startsWith('memory alloc limit exceeded')) {
      return ValidationError.field(field, 'used more memory than expressions are allowed');
    }
    cause = (cause as { originalError?: unknown }).originalError;
  }
  return ValidationError.field(field, `could not be rendered${position(error)}`);
}
