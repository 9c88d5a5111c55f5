import { isIPv4, isIPv6 } from 'node:net';

/**
 * The phishing cue of the approval page. Device-code phishing sends a person a code that the
 * attacker's own machine asked for: the person approves a device that is not theirs. A person
 * approving their own device is almost always on the network it asked from, so the page compares
 * the two addresses as the service saw them (behind `TRUST_PROXY`, the client's):
 *
 * - IPv4: the same /24;
 * - IPv6: the same /48 (one site's allocation);
 * - an IPv4-mapped IPv6 address (`::ffff:192.0.2.1`) counts as the IPv4 address;
 * - anything else (the two in different address families, an address not recorded or not
 *   readable) is another network.
 *
 * On another network the page says so before the buttons, and approving needs the person to
 * tick "I started this on my own device just now" (checked by the server, not the page).
 * It is a cue, not a control: a VPN or a phone on mobile data differ from the office while
 * being the person's own, and an attacker on the same network is not caught.
 */
export function sameNetwork(deviceAddress: string | null | undefined, approverAddress: string | null | undefined): boolean {
  const device = networkOf(deviceAddress);
  const approver = networkOf(approverAddress);
  return device !== undefined && device === approver;
}

/** The address's network as a string (`4:192.0.2`, `6:2001:0db8:0001`), if it is an address. */
export function networkOf(address: string | null | undefined): string | undefined {
  if (!address || address.length > 64) return undefined;
  const zone = address.indexOf('%');
  const bare = (zone === -1 ? address : address.slice(0, zone)).replace(/^\[|\]$/g, '');
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(bare);
  const v4 = mapped ? mapped[1]! : bare;
  if (isIPv4(v4)) return `4:${v4.split('.').slice(0, 3).join('.')}`;
  if (!isIPv6(bare)) return undefined;
  const groups = expandIPv6(bare);
  return groups ? `6:${groups.slice(0, 3).join(':')}` : undefined;
}

/** The eight groups of an IPv6 address, four hex digits each. */
function expandIPv6(address: string): string[] | undefined {
  let text = address.toLowerCase();
  // A trailing dotted quad (`::1.2.3.4`) is two groups.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  if (isIPv4(tail)) {
    const [a, b, c, d] = tail.split('.').map(Number) as [number, number, number, number];
    text = `${text.slice(0, lastColon + 1)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, rest] = text.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = rest ? rest.split(':') : [];
  const missing = 8 - left.length - right.length;
  if (missing < 0 || (rest === undefined && missing !== 0)) return undefined;
  const groups = [...left, ...Array<string>(rest === undefined ? 0 : missing).fill('0'), ...right];
  return groups.length === 8 ? groups.map((group) => group.padStart(4, '0')) : undefined;
}
