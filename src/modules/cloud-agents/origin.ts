import type { Request } from 'express';
import { invalidRequest } from '../../http/errors.js';
import { HOST_NAME } from '../organisation/service.js';

const PORT = /^\d{1,5}$/;
const IPV6 = /^\[[0-9a-f:.]+\]$/;

/**
 * PLACEHOLDER FOR THE ONE TRUSTED-ORIGIN FUNCTION (issue 8's `src/http/origin.ts`, written in
 * parallel): swap every call of this for it at merge, and delete this file. Every absolute URL
 * the cloud-agent and relay code builds (the run's `mcp.url`, the assertion's `iss`) comes from
 * here and nowhere else.
 *
 * PLATFORM_BASE_URL when set; otherwise the scheme and host the request was addressed to, the
 * forwarded ones only when TRUST_PROXY trusts the proxy (Express decides that for `req.protocol`
 * and `req.host`), the host strictly validated as a host name (or bracketed IPv6 address) with an
 * optional port: no user info, path, second colon or percent-encoding can get through.
 */
export function trustedOriginOf(req: Request, baseUrl: string | undefined): string {
  if (baseUrl !== undefined) return baseUrl;
  const host = (req.host ?? '').toLowerCase();
  const colon = host.startsWith('[') ? host.indexOf(':', host.indexOf(']')) : host.indexOf(':');
  const name = colon < 0 ? host : host.slice(0, colon);
  const port = colon < 0 ? undefined : host.slice(colon + 1);
  const validName = HOST_NAME.test(name) || IPV6.test(name);
  const validPort = port === undefined || (PORT.test(port) && Number(port) > 0 && Number(port) < 65536);
  if (!validName || !validPort) throw invalidRequest('the Host header is not a host name with an optional port');
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}
