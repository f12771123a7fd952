import { describe, expect, it } from 'vitest';
import { isIpLiteral, refusedAddressReason } from './address-policy.ts';

const closed = { allowPrivateNetworks: false };
const open = { allowPrivateNetworks: true };

describe('refusedAddressReason with private networks disallowed', () => {
	it.each([
		['127.0.0.1', 'loopback'],
		['127.255.0.9', 'loopback'],
		['::1', 'loopback'],
		['10.1.2.3', 'private'],
		['172.16.0.1', 'private'],
		['172.31.255.255', 'private'],
		['192.168.1.1', 'private'],
		['169.254.10.10', 'linkLocal'],
		['fe80::1', 'linkLocal'],
		['fe80::1%eth0', 'linkLocal'],
		['fc00::1', 'uniqueLocal'],
		['fd12:3456::1', 'uniqueLocal'],
		['100.64.0.1', 'carrierGradeNat'],
		['224.0.0.1', 'multicast'],
		['ff02::1', 'multicast'],
		['0.0.0.0', 'unspecified'],
		['0.1.2.3', 'unspecified'],
		['::', 'unspecified'],
		['255.255.255.255', 'broadcast'],
		['240.0.0.1', 'reserved'],
		['198.18.0.1', 'reserved'],
		['192.0.0.8', 'reserved'],
	])('refuses %s (%s)', (address, range) => {
		expect(refusedAddressReason(address, 'host.test', closed)).toBe(`${range} address`);
	});

	it.each([
		['::ffff:127.0.0.1'],
		['::ffff:7f00:1'],
		['[::ffff:127.0.0.1]'],
		['::ffff:10.0.0.1'],
		['::ffff:169.254.169.254'],
		['64:ff9b::7f00:1'],
		['::ffff:0:7f00:1'],
		['2002:7f00:1::'],
		['2002:c0a8:101::'],
	])('refuses the IPv4-embedding form %s of a private address', (address) => {
		expect(refusedAddressReason(address, 'host.test', closed)).not.toBeNull();
	});

	it.each([['169.254.169.254'], ['fd00:ec2::254'], ['100.100.100.200'], ['::ffff:169.254.169.254']])('refuses the cloud-metadata address %s', (address) => {
		expect(refusedAddressReason(address, 'host.test', closed)).toBe('cloud metadata address');
	});

	it.each([['93.184.215.14'], ['1.1.1.1'], ['2606:4700:4700::1111'], ['::ffff:93.184.215.14'], ['64:ff9b::5db8:d70e']])('allows the public address %s', (address) => {
		expect(refusedAddressReason(address, 'host.test', closed)).toBeNull();
	});

	it('refuses what it cannot parse', () => {
		expect(refusedAddressReason('not-an-ip', 'host.test', closed)).toBe('unparsable address');
	});

	it('exempts allowed host names from the private rule but not from the metadata rule', () => {
		const policy = { allowPrivateNetworks: false, allowedHosts: ['intranet.test'] };
		expect(refusedAddressReason('10.0.0.5', 'intranet.test', policy)).toBeNull();
		expect(refusedAddressReason('10.0.0.5', 'other.test', policy)).toBe('private address');
		expect(refusedAddressReason('169.254.169.254', 'intranet.test', policy)).toBe('cloud metadata address');
	});
});

describe('refusedAddressReason with private networks allowed', () => {
	it('allows loopback and private addresses', () => {
		expect(refusedAddressReason('127.0.0.1', 'localhost', open)).toBeNull();
		expect(refusedAddressReason('::1', 'localhost', open)).toBeNull();
		expect(refusedAddressReason('192.168.0.10', 'nas.test', open)).toBeNull();
	});

	it('still refuses cloud-metadata addresses', () => {
		expect(refusedAddressReason('169.254.169.254', 'metadata.test', open)).toBe('cloud metadata address');
		expect(refusedAddressReason('fd00:ec2::254', 'metadata.test', open)).toBe('cloud metadata address');
	});
});

describe('isIpLiteral', () => {
	it('tells IP literals, bracketed or not, from host names', () => {
		expect(isIpLiteral('127.0.0.1')).toBe(true);
		expect(isIpLiteral('[::1]')).toBe(true);
		expect(isIpLiteral('localhost')).toBe(false);
		expect(isIpLiteral('example.com')).toBe(false);
	});
});
