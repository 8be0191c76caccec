import { describe, expect, it } from 'vitest';
import { isRefusedAddress } from '../../src/sandbox/egress/ip-ranges.js';

describe('isRefusedAddress', () => {
  it.each([
    '127.0.0.1',
    '127.255.255.254',
    '10.0.0.1',
    '172.16.0.1',
    '172.31.255.255',
    '192.168.1.1',
    '169.254.169.254',
    '169.254.0.1',
    '100.64.0.1',
    '100.127.255.255',
    '0.0.0.0',
    '0.1.2.3',
    '224.0.0.1',
    '239.255.255.250',
    '240.0.0.1',
    '255.255.255.255',
    '192.0.2.10',
    '198.18.0.1',
    '::',
    '::1',
    'fc00::1',
    'fd12:3456::1',
    'fe80::1',
    'fe80::1%eth0',
    'febf::1',
    'ff02::1',
    '::ffff:127.0.0.1',
    '::ffff:7f00:1',
    '::ffff:169.254.169.254',
    '::ffff:10.0.0.1',
    '64:ff9b::a9fe:a9fe',
    '2002:a00:1::1',
    '2001:db8::1',
    '2001:0:4136:e378::1',
    '::127.0.0.1',
  ])('refuses %s', (address) => {
    expect(isRefusedAddress(address)).toBe(true);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '93.184.216.34',
    '172.15.255.255',
    '172.32.0.1',
    '100.63.255.255',
    '100.128.0.1',
    '169.253.255.255',
    '192.169.0.1',
    '2606:4700:4700::1111',
    '2a00:1450:4001:80b::200e',
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('allows public %s', (address) => {
    expect(isRefusedAddress(address)).toBe(false);
  });

  it('refuses what is not an IP literal', () => {
    expect(isRefusedAddress('localhost')).toBe(true);
    expect(isRefusedAddress('')).toBe(true);
  });
});

/**
 * IPv6 forms that carry an IPv4 address. Each row: the literal, whether egress refuses it, and why.
 * "decoded": the embedded IPv4 address is judged by the IPv4 rules. "refused": the destination
 * cannot be decided from the literal, so it is refused whatever it embeds.
 */
describe('isRefusedAddress: IPv6 forms embedding IPv4', () => {
  it.each([
    // IPv4-translated ::ffff:0:a.b.c.d (RFC 2765): decoded.
    ['::ffff:0:127.0.0.1', true, 'translated loopback'],
    ['::ffff:0:169.254.169.254', true, 'translated metadata'],
    ['::ffff:0:a9fe:a9fe', true, 'translated metadata, hex'],
    ['::ffff:0:10.1.2.3', true, 'translated private'],
    ['::ffff:0:8.8.8.8', false, 'translated public'],
    // IPv4-mapped ::ffff:a.b.c.d: decoded.
    ['::ffff:192.168.0.1', true, 'mapped private'],
    ['::ffff:1.1.1.1', false, 'mapped public'],
    // IPv4-compatible ::a.b.c.d (deprecated): refused.
    ['::8.8.8.8', true, 'compatible, even public'],
    ['::a9fe:a9fe', true, 'compatible metadata'],
    ['::1:0:0:0', true, 'reserved ::/8'],
    // Well-known NAT64 64:ff9b::/96 (RFC 6052): decoded.
    ['64:ff9b::127.0.0.1', true, 'well-known NAT64 loopback'],
    ['64:ff9b::10.0.0.1', true, 'well-known NAT64 private'],
    ['64:ff9b::1.1.1.1', false, 'well-known NAT64 public'],
    // Local-use NAT64 64:ff9b:1::/48 (RFC 8215) and the rest of 64:ff9b::/32: refused.
    ['64:ff9b:1::a9fe:a9fe', true, 'local-use NAT64 /96 layout'],
    ['64:ff9b:1:a9fe:a9:fe00::', true, 'local-use NAT64 /48 layout'],
    ['64:ff9b:1::808:808', true, 'local-use NAT64 embedding a public address'],
    ['64:ff9b:2::1', true, 'other 64:ff9b::/32'],
    ['64:ff9b::1:0:808:808', true, 'well-known prefix with non-zero suffix bits'],
    // 6to4 2002:V4ADDR::/48: decoded.
    ['2002:7f00:1::1', true, '6to4 loopback'],
    ['2002:a9fe:a9fe::1', true, '6to4 metadata'],
    ['2002:c0a8:101::1', true, '6to4 private'],
    ['2002:808:808::1', false, '6to4 public'],
    // Teredo 2001::/32: refused.
    ['2001::1', true, 'Teredo'],
    ['2001:0:808:808::1', true, 'Teredo with a public server'],
  ] as [string, boolean, string][])('%s → refused %s (%s)', (address, refused) => {
    expect(isRefusedAddress(address)).toBe(refused);
  });
});
