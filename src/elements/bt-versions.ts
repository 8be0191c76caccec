/*
 * The versions of Basis Theory's Web Elements loader (`@basis-theory/web-elements`) whose page API
 * the vault serves under `/web-elements/<version>/` (docs/elements.md, "Basis Theory Web Elements
 * and React Elements"). The loader asks for the version it was published as; each one here is
 * driven by the suite with the real package (test/elements/bt-web-elements.test.ts).
 */

/** The path prefix the loader builds from `customDomain`: `https://<customDomain>/web-elements/<version>/`. */
export const BT_ELEMENTS_PATH = '/web-elements';

/** Served versions, as patterns over the loader's version; and as the error names them. */
const SERVED: readonly { pattern: RegExp; name: string }[] = [{ pattern: /^2\.17\.\d{1,4}$/, name: '2.17.x' }];

/** How the served versions are named in errors. */
export const SERVED_VERSIONS = SERVED.map((v) => v.name).join(', ');

/** A version as the loader writes it (semver, optionally with a pre-release tag); anything else is no version. */
const VERSION = /^\d{1,4}\.\d{1,4}\.\d{1,4}(?:-[0-9A-Za-z.-]{1,20})?$/;

export function isVersion(value: string): boolean {
  return VERSION.test(value);
}

export function isServedVersion(version: string): boolean {
  return SERVED.some((v) => v.pattern.test(version));
}

/** What the vault says when a loader of another version asks. */
export function unservedVersionMessage(version: string): string {
  return `tokenvault serves Basis Theory Web Elements ${SERVED_VERSIONS}; this page's @basis-theory/web-elements is ${version}: install a served version (docs/elements.md)`;
}
