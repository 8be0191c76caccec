/**
 * `serve --config tokenvault.toml`: every serve option as a top-level TOML key of the same name
 * (docs/configuration.md). The keys are derived from the option table `serve` passes to parseArgs,
 * so an option added there is a config key and a `TOKENVAULT_<NAME>` environment variable with no
 * code here. Precedence: flag, then environment variable, then file, then the option's default.
 */
import { readFileSync } from 'node:fs';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { TomlError, parse as parseToml } from 'smol-toml';
import * as v from 'valibot';
import { CliError, UsageError } from './io.js';

type OptionSpec = { type: 'string' | 'boolean'; multiple?: boolean; short?: string; default?: string | boolean | string[] | boolean[] };
export type OptionTable = Readonly<Record<string, OptionSpec>>;

/** Options that are about the invocation, not the server: never config keys. */
const NOT_CONFIGURABLE = new Set(['help', 'config']);
/** Key names that would hold a secret: the file names a file or an environment variable instead. */
const SECRET_NAME = /(^|-)(key|password|secret|token|pin)$/;

/** A value and where it came from, for messages. */
export interface ConfigSource {
  /** `tokenvault.toml:12` or `TOKENVAULT_PORT`. */
  where: string;
}

/** What one command's parse saw: where each value came from, and the option table. */
interface ParseContext {
  seen: Map<string, ConfigSource>;
  table?: OptionTable;
}

/**
 * The parse context of the command `attributeConfigErrors` is starting, set only while that
 * command's synchronous start runs (where it parses its options). Not an AsyncLocalStorage: running
 * `serve` inside one would switch Node's async hooks on for the server's whole life, and every
 * promise of every request would pay for them (docs/performance.md, "Against the floor").
 */
let starting: ParseContext | undefined;

/** The environment variable that sets an option: `--metrics-port` is TOKENVAULT_METRICS_PORT. */
export function envName(option: string): string {
  return `TOKENVAULT_${option.toUpperCase().replace(/-/g, '_')}`;
}

/** The options of a table that a config file may set. */
export function configKeys(table: OptionTable): string[] {
  return Object.keys(table).filter((name) => !NOT_CONFIGURABLE.has(name));
}

/**
 * parseArgs with `--config <file>` and the environment: flags given win, then TOKENVAULT_<NAME>,
 * then the file, then the table's defaults. The result has parseArgs' own shape.
 */
export function parseWithConfig<T extends ParseArgsConfig & { options: OptionTable }>(
  env: Readonly<Record<string, string | undefined>>,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  const table = config.options;
  const bare = Object.fromEntries(Object.entries(table).map(([name, { default: _default, ...spec }]) => [name, spec]));
  const given = parseArgs({ ...config, options: { ...bare, config: { type: 'string' } } }) as { values: Record<string, unknown>; positionals: string[] };
  const file = given.values['config'] as string | undefined;
  const fromFile = file === undefined ? new Map<string, Located>() : readConfigFile(file, table);
  const fromEnv = envValues(env, table);
  const current = starting;
  if (current) current.table = table;
  const seen = current?.seen;
  const values: Record<string, unknown> = {};
  for (const [name, spec] of Object.entries(table)) {
    if (name === 'config') continue;
    let value = given.values[name];
    const source = value !== undefined ? undefined : (fromEnv.get(name) ?? fromFile.get(name));
    if (source) {
      value = source.value;
      seen?.set(name, { where: source.where });
    }
    value ??= spec.default;
    if (value !== undefined) values[name] = value;
  }
  return { ...given, values } as unknown as ReturnType<typeof parseArgs<T>>;
}

interface Located extends ConfigSource {
  value: string | boolean | string[];
}

/**
 * Reads and validates a config file against the table: TOML syntax, known keys only, the option's
 * type, no secret in clear. Each error names the file, the line and the key.
 */
export function readConfigFile(file: string, table: OptionTable): Map<string, Located> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new CliError(`cannot read the config file ${file} (${(error as { code?: string }).code ?? 'error'})`);
  }
  let parsed: Record<string, unknown>;
  try {
    parsed = parseToml(text) as Record<string, unknown>;
  } catch (error) {
    if (error instanceof TomlError) throw new UsageError(`${file}:${error.line}: ${error.message.split('\n')[0]}`);
    throw error;
  }
  const lines = keyLines(text);
  const at = (key: string) => `${file}:${lines.get(key) ?? 1}`;
  const keys = configKeys(table);
  const result = v.safeParse(fileSchema(table, keys), parsed);
  if (!result.success) {
    const issue = result.issues[0];
    const key = String(issue.path?.[0]?.key ?? '');
    throw new UsageError(`${at(key)}: ${key}: ${issueMessage(key, issue.message, keys)}`);
  }
  const found = new Map<string, Located>();
  for (const [key, value] of Object.entries(result.output)) {
    if (key === 'postgres' && typeof value === 'string' && urlPassword(value)) {
      throw new UsageError(`${at(key)}: postgres: the URL holds a password; leave it out and name a file with postgres-password-file (or set PGPASSWORD)`);
    }
    found.set(key, { where: at(key), value: value as Located['value'] });
  }
  return found;
}

/** The valibot schema of a file: a strict object of the table's keys, TOML integers accepted where the option takes a number as text. */
function fileSchema(table: OptionTable, keys: readonly string[]) {
  const text = v.pipe(
    v.union([v.pipe(v.string(), v.nonEmpty('must not be empty')), v.pipe(v.number(), v.integer('must be a whole number'))], 'must be a string or a whole number'),
    v.transform((value) => String(value)),
  );
  const entries = Object.fromEntries(
    keys.map((key) => {
      const spec = table[key]!;
      const one = spec.type === 'boolean' ? v.boolean('must be true or false') : text;
      return [key, v.optional(spec.multiple ? v.array(one, 'must be an array') : one)];
    }),
  );
  return v.strictObject(entries, 'is not a serve option');
}

function issueMessage(key: string, message: string, keys: readonly string[]): string {
  if (keys.includes(key)) return message;
  if (SECRET_NAME.test(key)) {
    const file = keys.includes(`${key}-file`) ? `name a file with ${key}-file, or ` : '';
    return `secrets are not kept in the config file: ${file}set the environment variable ${envName(key)}`;
  }
  return `is not a serve option (the keys are the serve flags without their dashes: ${keys.slice(0, 4).join(', ')}, …; see tokenvault serve --help)`;
}

/** TOKENVAULT_<NAME> for each configurable option: booleans as true/false/1/0, lists comma-separated. */
function envValues(env: Readonly<Record<string, string | undefined>>, table: OptionTable): Map<string, Located> {
  const found = new Map<string, Located>();
  for (const key of configKeys(table)) {
    const name = envName(key);
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    const spec = table[key]!;
    let value: Located['value'] = raw;
    if (spec.type === 'boolean') {
      if (!['true', 'false', '1', '0'].includes(raw)) throw new UsageError(`${name} must be true or false`);
      value = raw === 'true' || raw === '1';
    } else if (spec.multiple) {
      value = raw
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '');
    }
    found.set(key, { where: name, value });
  }
  return found;
}

/** The line of each top-level key (the format gives values, not positions). */
function keyLines(text: string): Map<string, number> {
  const lines = new Map<string, number>();
  text.split('\n').forEach((line, index) => {
    const match = /^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_-]+))\s*=/.exec(line);
    const key = match?.[1] ?? match?.[2] ?? match?.[3];
    if (key !== undefined && !lines.has(key)) lines.set(key, index + 1);
  });
  return lines;
}

function urlPassword(value: string): boolean {
  try {
    return new URL(value).password !== '';
  } catch {
    return false;
  }
}

/**
 * Runs a command whose options may come from a file or the environment: a usage error about
 * `--<option>` whose value came from there names its line (or variable) instead of the flag.
 * `run` must call parseWithConfig in its synchronous start, before its first await (serve does).
 */
export async function attributeConfigErrors<T>(run: () => Promise<T>, parsed?: (context: ParseContext) => void): Promise<T> {
  const current: ParseContext = { seen: new Map() };
  const outer = starting;
  starting = current;
  let running: Promise<T>;
  try {
    running = run();
  } catch (error) {
    running = Promise.reject(error);
  } finally {
    starting = outer;
  }
  try {
    return await running;
  } catch (error) {
    throw attributed(error, current.seen);
  } finally {
    parsed?.(current);
  }
}

function attributed(error: unknown, seen: ReadonlyMap<string, ConfigSource>): unknown {
  if (!(error instanceof UsageError) && !(error instanceof CliError)) return error;
  const match = /--([a-z0-9-]+)/.exec(error.message);
  const source = match ? seen.get(match[1]!) : undefined;
  if (!match || !source) return error;
  const message = `${source.where}: ${error.message.replace(`--${match[1]}`, match[1]!)}`;
  return error instanceof UsageError ? new UsageError(message) : new CliError(message);
}
