import type { Liquid, Template } from 'liquidjs';
import { ValidationError } from '../errors/errors.js';
import { parseError } from './expression-errors.js';
import { type SingleVariable, type VaultPipeline, singleVariable, vaultPipeline } from './fast-paths.js';
import { MAX_TEMPLATE_LENGTH } from './liquid-instance.js';
import { checkTemplateLimits } from './template-limits.js';

/**
 * A parsed template. `path` is set when the template is exactly one variable output without
 * filters (`{{ data.a.b }}`): the segments when they are all literal names, else an empty array.
 */
export interface Compiled {
  templates: Template[];
  single: SingleVariable | undefined;
  /** `{{ data.a | vault_filter: 'literal', 4 | … }}`: evaluated without liquid when it yields text. */
  pipeline: VaultPipeline | undefined;
}

/** Parses and checks a template (template-limits.ts); throws ValidationError.field(field, …) when it fails. */
export function compileTemplate(liquid: Liquid, template: string, field: string): Compiled {
  if (template.length > MAX_TEMPLATE_LENGTH) {
    throw ValidationError.field(field, `is longer than ${MAX_TEMPLATE_LENGTH} characters`);
  }
  let templates: Template[];
  try {
    templates = liquid.parse(template);
  } catch (error) {
    throw parseError(error, field);
  }
  checkTemplateLimits(templates, field);
  const single = singleVariable(templates);
  return { templates, single, pipeline: single === undefined ? vaultPipeline(templates) : undefined };
}
