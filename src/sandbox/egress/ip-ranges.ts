/**
 * Which IP addresses reactor egress refuses unless `allowPrivateNetwork` is set: everything that is
 * not a public unicast address (loopback, private, link-local including cloud metadata at
 * 169.254.169.254, CGNAT, unspecified, multicast, reserved and documentation ranges). IPv6 forms
 * that embed an IPv4 address at a known place (mapped ::ffff:0:0/96, translated ::ffff:0:0:0/96,
 * well-known NAT64 64:ff9b::/96, 6to4 2002::/16) are judged by the embedded address; forms whose
 * destination cannot be decided from the literal (IPv4-compatible ::/96, local-use NAT64
 * 64:ff9b:1::/48 and the rest of 64:ff9b::/32, Teredo 2001::/32) are refused outright.
 */
import { isIPv4, isIPv6 } from 'node:net';

type Range = readonly [base: number, bits: number];

const IPV4_REFUSED: readonly Range[] = [
  [ipv4('0.0.0.0'), 8], // "this network", incl. 0.0.0.0
  [ipv4('10.0.0.0'), 8], // private
  [ipv4('100.64.0.0'), 10], // carrier-grade NAT
  [ipv4('127.0.0.0'), 8], // loopback
  [ipv4('169.254.0.0'), 16], // link-local, cloud metadata
  [ipv4('172.16.0.0'), 12], // private
  [ipv4('192.0.0.0'), 24], // IETF protocol assignments
  [ipv4('192.0.2.0'), 24], // documentation
  [ipv4('192.88.99.0'), 24], // 6to4 relay anycast
  [ipv4('192.168.0.0'), 16], // private
  [ipv4('198.18.0.0'), 15], // benchmarking
  [ipv4('198.51.100.0'), 24], // documentation
  [ipv4('203.0.113.0'), 24], // documentation
  [ipv4('224.0.0.0'), 4], // multicast
  [ipv4('240.0.0.0'), 4], // reserved, broadcast
];

/** True when `address` (an IPv4 or IPv6 literal) is not a public unicast address. */
export function isRefusedAddress(address: string): boolean {
  if (isIPv4(address)) return isRefusedIpv4(ipv4(address));
  if (isIPv6(address)) return isRefusedIpv6(ipv6(address));
  return true; // not an IP literal: refuse rather than guess
}

function isRefusedIpv4(value: number): boolean {
  return IPV4_REFUSED.some(([base, bits]) => prefixMatches(value, base, bits));
}

function prefixMatches(value: number, base: number, bits: number): boolean {
  const mask = bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0;
  return (value & mask) >>> 0 === (base & mask) >>> 0;
}

function isRefusedIpv6(h: number[]): boolean {
  const [a = 0, b = 0, c = 0, d = 0, e = 0, f = 0, g = 0, k = 0] = h;
  const embedded = ((g << 16) | k) >>> 0;
  const zeroUpTo = (n: number): boolean => h.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(7) && (k === 0 || k === 1)) return true; // :: and ::1
  if (zeroUpTo(5) && f === 0xffff) return isRefusedIpv4(embedded); // IPv4-mapped ::ffff:a.b.c.d
  // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765 SIIT): a translator delivers it to the IPv4 address.
  if (zeroUpTo(4) && e === 0xffff && f === 0) return isRefusedIpv4(embedded);
  if (a === 0x64 && b === 0xff9b) {
    // Well-known NAT64 64:ff9b::/96 (RFC 6052) reaches the embedded IPv4 address: judge that.
    if (c === 0 && d === 0 && e === 0 && f === 0) return isRefusedIpv4(embedded);
    // Local-use NAT64 64:ff9b:1::/48 (RFC 8215) and the rest of 64:ff9b::/32: the translator's
    // prefix length (and so where the IPv4 address sits) is a local choice we cannot know. Refuse.
    return true;
  }
  // IPv4-compatible ::a.b.c.d (deprecated) and the rest of ::/8 (IETF reserved; 64:ff9b::/32 is
  // judged above): nothing public lives there.
  if ((a & 0xff00) === 0) return true;
  if (a === 0x2002) return isRefusedIpv4(((b << 16) | c) >>> 0); // 6to4 2002:V4ADDR::/48
  // Teredo 2001::/32: the client's IPv4 address and port are obfuscated, and the server address
  // is a relay; the packet's real destination cannot be judged from the literal. Refuse.
  if (a === 0x2001 && b === 0) return true;
  if (a === 0x2001 && b === 0x0db8) return true; // documentation
  if (a === 0x0100 && b === 0 && c === 0 && d === 0) return true; // discard-only 100::/64
  if ((a & 0xfe00) === 0xfc00) return true; // unique local fc00::/7
  if ((a & 0xffc0) === 0xfe80) return true; // link-local fe80::/10
  if ((a & 0xffc0) === 0xfec0) return true; // deprecated site-local fec0::/10
  if ((a & 0xff00) === 0xff00) return true; // multicast ff00::/8
  return false;
}

function ipv4(address: string): number {
  return address.split('.').reduce((acc, octet) => ((acc << 8) | Number(octet)) >>> 0, 0);
}

/** Expands an IPv6 literal (with optional zone and embedded IPv4) into eight 16-bit groups. */
function ipv6(address: string): number[] {
  let text = address.split('%')[0] ?? '';
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (tail.includes('.')) {
    const v4 = ipv4(tail);
    text = `${text.slice(0, lastColon + 1)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head = '', rest] = text.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = rest === undefined || rest === '' ? [] : rest.split(':');
  const fill = rest === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...fill, ...right].map((group) => parseInt(group, 16));
}
