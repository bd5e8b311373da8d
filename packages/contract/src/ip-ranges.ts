import ipaddr from 'ipaddr.js';

/**
 * Address ranges Herald refuses to connect to (docs/api.md, The webhook resource), used at webhook
 * creation for IP-literal URLs and by delivery for every resolved address at connect time. Written
 * out as explicit CIDRs (rather than relying on a library's range names) so the list is reviewable
 * in one place.
 */

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Why an address is refused; shown in validation messages and delivery logs. */
export type BlockedRangeKind =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'unique-local'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'documentation'
  | 'reserved'
  | 'broadcast';

interface Range {
  cidr: [Address, number];
  kind: BlockedRangeKind;
}

const range = (cidr: string, kind: BlockedRangeKind): Range => ({
  cidr: ipaddr.parseCIDR(cidr),
  kind,
});

const IPV4_BLOCKED: readonly Range[] = [
  range('0.0.0.0/8', 'unspecified'), // "this network" (RFC 1122)
  range('10.0.0.0/8', 'private'), // RFC 1918
  range('100.64.0.0/10', 'cgnat'), // RFC 6598
  range('127.0.0.0/8', 'loopback'),
  range('169.254.0.0/16', 'link-local'), // incl. 169.254.169.254 (cloud metadata)
  range('172.16.0.0/12', 'private'), // RFC 1918
  range('192.0.0.0/24', 'reserved'), // IETF protocol assignments
  range('192.0.2.0/24', 'documentation'), // TEST-NET-1
  range('192.88.99.0/24', 'reserved'), // 6to4 relay anycast (deprecated)
  range('192.168.0.0/16', 'private'), // RFC 1918
  range('198.18.0.0/15', 'reserved'), // benchmarking
  range('198.51.100.0/24', 'documentation'), // TEST-NET-2
  range('203.0.113.0/24', 'documentation'), // TEST-NET-3
  range('224.0.0.0/4', 'multicast'),
  range('255.255.255.255/32', 'broadcast'),
  range('240.0.0.0/4', 'reserved'), // class E
];

// IPv6 outside 2000::/3 (global unicast) is refused as a whole unless listed here or embedding
// an IPv4 address; inside it, these special-purpose blocks are refused.
const IPV6_BLOCKED: readonly Range[] = [
  range('::/128', 'unspecified'),
  range('::1/128', 'loopback'),
  range('fc00::/7', 'unique-local'),
  range('fe80::/10', 'link-local'),
  range('fec0::/10', 'link-local'), // site-local (deprecated)
  range('ff00::/8', 'multicast'),
  range('2001:db8::/32', 'documentation'),
  range('3fff::/20', 'documentation'), // RFC 9637
  range('2001::/32', 'reserved'), // Teredo (embeds obfuscated IPv4 addresses)
  range('2001:2::/48', 'reserved'), // benchmarking
  range('2001:10::/28', 'reserved'), // ORCHID
  range('2001:20::/28', 'reserved'), // ORCHIDv2
  range('64:ff9b:1::/48', 'private'), // local-use NAT64 (RFC 8215)
  range('100::/64', 'reserved'), // discard-only
];
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');
const IPV6_UNSPECIFIED_OR_LOOPBACK = ipaddr.parseCIDR('::/127');

/** IPv6 forms that carry an IPv4 address; the IPv4 address inside is what gets reached. */
const IPV6_EMBEDDING: readonly {
  cidr: [Address, number];
  extract: (bytes: number[]) => number[];
}[] = [
  { cidr: ipaddr.parseCIDR('::ffff:0:0/96'), extract: (b) => b.slice(12, 16) }, // IPv4-mapped
  { cidr: ipaddr.parseCIDR('::ffff:0:0:0/96'), extract: (b) => b.slice(12, 16) }, // SIIT (RFC 6145)
  { cidr: ipaddr.parseCIDR('64:ff9b::/96'), extract: (b) => b.slice(12, 16) }, // NAT64 (RFC 6052)
  { cidr: ipaddr.parseCIDR('2002::/16'), extract: (b) => b.slice(2, 6) }, // 6to4
  { cidr: ipaddr.parseCIDR('::/96'), extract: (b) => b.slice(12, 16) }, // IPv4-compatible (deprecated)
];

/** A parsed list of CIDRs (e.g. from SSRF_ALLOW_CIDRS). */
export type CidrList = readonly (readonly [Address, number])[];

/**
 * Parses a comma- or whitespace-separated list of CIDRs ("127.0.0.0/8, ::1/128"); a bare address
 * counts as a single-address CIDR. Throws an Error naming the bad entry.
 */
export function parseCidrList(text: string): CidrList {
  const list: (readonly [Address, number])[] = [];
  for (const entry of text.split(/[\s,]+/).filter(Boolean)) {
    try {
      if (entry.includes('/')) list.push(ipaddr.parseCIDR(entry));
      else {
        const address = ipaddr.parse(entry);
        list.push([address, address.kind() === 'ipv4' ? 32 : 128]);
      }
    } catch {
      throw new Error(`"${entry}" is not a CIDR such as 127.0.0.0/8 or ::1/128`);
    }
  }
  return list;
}

const inCidr = (address: Address, cidr: readonly [Address, number]): boolean =>
  address.kind() === cidr[0].kind() && address.match(cidr[0], cidr[1]);

/** True when the text is an IPv4 or IPv6 address (no brackets, no zone). */
export function isIpAddress(text: string): boolean {
  return ipaddr.isValid(text) && !text.includes('%');
}

export type AddressCheck =
  { blocked: false } | { blocked: true; kind: BlockedRangeKind; reason: string };

function classify(address: Address): { kind: BlockedRangeKind; embedded?: string } | undefined {
  if (address.kind() === 'ipv4') {
    return IPV4_BLOCKED.find((r) => inCidr(address, r.cidr));
  }
  const v6 = address as ipaddr.IPv6;
  for (const form of IPV6_EMBEDDING) {
    // ::/96 also holds ::1 and ::; those are caught below by their own entries.
    if (inCidr(v6, form.cidr) && !inCidr(v6, IPV6_UNSPECIFIED_OR_LOOPBACK)) {
      const v4 = new ipaddr.IPv4(form.extract(v6.toByteArray()));
      const inner = IPV4_BLOCKED.find((r) => inCidr(v4, r.cidr));
      return inner ? { kind: inner.kind, embedded: v4.toString() } : undefined;
    }
  }
  const listed = IPV6_BLOCKED.find((r) => inCidr(v6, r.cidr));
  if (listed) return listed;
  return inCidr(v6, IPV6_GLOBAL_UNICAST) ? undefined : { kind: 'reserved' };
}

/** The IPv4 address an IPv6 form carries (mapped, NAT64, 6to4…), if any. */
function embeddedIpv4(address: Address): ipaddr.IPv4 | undefined {
  if (address.kind() !== 'ipv6') return undefined;
  const v6 = address as ipaddr.IPv6;
  if (inCidr(v6, IPV6_UNSPECIFIED_OR_LOOPBACK)) return undefined;
  const form = IPV6_EMBEDDING.find((f) => inCidr(v6, f.cidr));
  return form ? new ipaddr.IPv4(form.extract(v6.toByteArray())) : undefined;
}

/**
 * Whether Herald may connect to this IP address: refused when it falls in a blocked range (or is an
 * IPv6 form embedding one) unless an allow-listed CIDR holds it (or the IPv4 address it embeds).
 * Text that is not an IP address is refused as 'reserved'.
 */
export function checkAddress(ip: string, allow: CidrList = []): AddressCheck {
  let address: Address;
  try {
    address = ipaddr.parse(ip.replace(/^\[(.*)\]$/, '$1'));
  } catch {
    return { blocked: true, kind: 'reserved', reason: `"${ip}" is not an IP address` };
  }
  const embedded = embeddedIpv4(address);
  if (allow.some((cidr) => inCidr(address, cidr) || (embedded && inCidr(embedded, cidr)))) {
    return { blocked: false };
  }
  const hit = classify(address);
  if (!hit) return { blocked: false };
  const via = hit.embedded ? ` (it embeds ${hit.embedded})` : '';
  // The setting that lifts the refusal, with the narrowest entry that would (an IPv6 form is
  // allowed by the IPv4 address it embeds).
  const entry = hit.embedded
    ? `${hit.embedded}/32`
    : `${address.toString()}/${address.kind() === 'ipv4' ? 32 : 128}`;
  return {
    blocked: true,
    kind: hit.kind,
    reason:
      `${address.toString()} is in a blocked address range: ${hit.kind}${via}; ` +
      `add ${entry} to SSRF_ALLOW_CIDRS to allow it`,
  };
}
