import ipaddr from 'ipaddr.js';

/** Cloud metadata endpoints: refused even when private networks are allowed. */
const METADATA_ADDRESSES: ReadonlySet<string> = new Set([
	'169.254.169.254', // AWS, GCP, Azure, OpenStack, DigitalOcean
	'169.254.170.2', // AWS ECS task metadata
	'169.254.170.23', // AWS EKS pod identity
	'100.100.100.200', // Alibaba Cloud
	'192.0.0.192', // Oracle Cloud
	'fd00:ec2::254', // AWS over IPv6
	'fd00:ec2::23', // AWS EKS pod identity over IPv6
]);

export interface AddressPolicy {
	/** When true, only cloud-metadata addresses are refused. */
	allowPrivateNetworks: boolean;
	/** Host names exempt from the private-network rule (not from the metadata rule). */
	allowedHosts?: readonly string[];
}

/**
 * Why a connection to `address` (reached through `hostname`) is refused, or null when it is allowed.
 * With private networks disallowed only globally routable unicast addresses pass; IPv4-mapped and other
 * IPv4-embedding IPv6 forms are judged by the IPv4 address inside; an unparsable address is refused.
 */
export function refusedAddressReason(address: string, hostname: string, policy: AddressPolicy): string | null {
	let parsed: ipaddr.IPv4 | ipaddr.IPv6;
	try {
		parsed = effectiveAddress(ipaddr.process(stripBrackets(address)));
	} catch {
		return 'unparsable address';
	}
	if (METADATA_ADDRESSES.has(compact(parsed))) return 'cloud metadata address';
	if (policy.allowPrivateNetworks) return null;
	if (policy.allowedHosts?.includes(stripBrackets(hostname).toLowerCase())) return null;
	if (parsed.kind() === 'ipv6' && isIpv4Compatible(parsed as ipaddr.IPv6)) return 'IPv4-compatible address';
	const range = parsed.range();
	return range === 'unicast' ? null : `${range} address`;
}

/** True when `host` (a URL hostname, brackets allowed) is an IP literal rather than a name. */
export function isIpLiteral(host: string): boolean {
	return ipaddr.isValid(stripBrackets(host));
}

/** A URL hostname without the brackets of an IPv6 literal. */
export function stripBrackets(host: string): string {
	return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/** NAT64, SIIT and 6to4 addresses reach the IPv4 address they embed, so that one is judged. */
function effectiveAddress(address: ipaddr.IPv4 | ipaddr.IPv6): ipaddr.IPv4 | ipaddr.IPv6 {
	if (address.kind() !== 'ipv6') return address;
	const v6 = address as ipaddr.IPv6;
	const range = v6.range();
	const parts = v6.parts;
	if (range === 'rfc6052' || range === 'rfc6145') return ipv4From(parts[6] ?? 0, parts[7] ?? 0);
	if (range === '6to4') return ipv4From(parts[1] ?? 0, parts[2] ?? 0);
	return v6;
}

function ipv4From(high: number, low: number): ipaddr.IPv4 {
	return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

/** `::a.b.c.d` (deprecated); `::` and `::1` have ranges of their own and are not matched here. */
function isIpv4Compatible(address: ipaddr.IPv6): boolean {
	return address.parts.slice(0, 6).every((part) => part === 0) && address.range() === 'unicast';
}

function compact(address: ipaddr.IPv4 | ipaddr.IPv6): string {
	return address.kind() === 'ipv4' ? address.toString() : (address as ipaddr.IPv6).toRFC5952String();
}
