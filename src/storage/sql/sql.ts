import type { Dialect, ListType, LockKind, RenderTarget } from './dialect.js';

/** A piece of a statement that each dialect spells its own way. */
export interface Piece {
  renderInto(dialect: Dialect, out: RenderTarget): void;
}

/** What goes between a template's strings: a parameter's number (1-based), or a piece. */
export type Slot = number | Piece;

/** A statement rendered for one dialect: its text, and how the operation's arguments bind to it. */
export class Rendered {
  readonly text: string;
  /** null when arguments bind as given (in order, unencoded): no copy per call. */
  readonly #order: readonly number[] | null;
  readonly #encoders: readonly (((value: unknown) => unknown) | null)[];

  constructor(out: RenderTarget) {
    this.text = out.text;
    const plain = out.order.every((n, i) => n === i + 1) && out.encoders.every((e) => e === null);
    // Numbered placeholders (PostgreSQL's `$n`) record no order: the arguments bind as given.
    this.#order = plain ? null : Object.freeze([...out.order]);
    this.#encoders = Object.freeze([...out.encoders]);
  }

  /** The values to bind, from the operation's arguments. */
  bind(args: readonly unknown[]): readonly unknown[] {
    const order = this.#order;
    if (order === null) return args;
    const values = new Array<unknown>(order.length);
    for (let i = 0; i < order.length; i++) {
      const value = args[order[i]! - 1];
      const encode = this.#encoders[i];
      values[i] = encode == null ? value : encode(value);
    }
    return values;
  }
}

/**
 * One statement, written once for every dialect (`sql\`SELECT ... FROM ${table('tenants')} WHERE id = ${1}\``).
 * Renderings are kept per dialect key: a statement is rendered once per store kind and schema,
 * and its text is then the key of the driver's prepared statement.
 */
export class Sql implements Piece {
  readonly #strings: readonly string[];
  readonly #slots: readonly Slot[];
  readonly #rendered = new Map<string, Rendered>();

  constructor(strings: readonly string[], slots: readonly Slot[]) {
    this.#strings = strings;
    this.#slots = slots;
  }

  render(dialect: Dialect): Rendered {
    let rendered = this.#rendered.get(dialect.key);
    if (rendered === undefined) {
      const out: RenderTarget = { text: '', order: [], encoders: [] };
      this.renderInto(dialect, out);
      rendered = new Rendered(out);
      this.#rendered.set(dialect.key, rendered);
    }
    return rendered;
  }

  renderInto(dialect: Dialect, out: RenderTarget): void {
    const strings = this.#strings;
    out.text += strings[0]!;
    for (let i = 0; i < this.#slots.length; i++) {
      const slot = this.#slots[i]!;
      if (typeof slot === 'number') dialect.param(slot, out);
      else slot.renderInto(dialect, out);
      out.text += strings[i + 1]!;
    }
  }
}

/** A statement of the store: text with `${n}` for argument n (1-based) and `${piece}` for dialect pieces. */
export function sql(strings: TemplateStringsArray | readonly string[], ...slots: Slot[]): Sql {
  return new Sql([...strings], slots);
}

/** Literal text, trusted (column lists, generated SET clauses): never a caller's value. */
export function raw(text: string): Piece {
  return { renderInto: (_dialect, out) => void (out.text += text) };
}

/** A table of the store's schema. */
export function table(name: string): Piece {
  return { renderInto: (dialect, out) => void (out.text += dialect.table(name)) };
}

/** `IN (...)` over list argument `n` (an array of `type`): one statement for any number of items. */
export function inList(n: number, type: ListType): Piece {
  return { renderInto: (dialect, out) => dialect.inList(n, type, out) };
}

/** A row source over list argument `n`, its one column named `value`. */
export function listRows(n: number, type: ListType): Piece {
  return { renderInto: (dialect, out) => dialect.listRows(n, type, out) };
}

/** The row-locking clause of `kind` where the dialect has one (PostgreSQL), else nothing. */
export function lock(kind: LockKind): Piece {
  return { renderInto: (dialect, out) => void (out.text += dialect.lock(kind)) };
}

/**
 * Text that differs by dialect where no piece above says it: every dialect must be given, so a
 * dialect added to Dialect['name'] fails to compile until each such place spells it.
 */
export function byDialect(variants: Record<Dialect['name'], Sql | string>): Piece {
  return {
    renderInto: (dialect, out) => {
      const variant = variants[dialect.name];
      if (typeof variant === 'string') out.text += variant;
      else variant.renderInto(dialect, out);
    },
  };
}
