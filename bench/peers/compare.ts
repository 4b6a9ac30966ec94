/**
 * The check that comes before any timing: the service and the peer give the same answer (status code
 * and JSON body) to a sample of requests of every kind. A benchmark of two servers that answer
 * differently would compare nothing.
 */
import { get } from 'node:http';
import { isDeepStrictEqual } from 'node:util';
import { ORDER_STATUS_FILTERS } from '../../schemas/api.js';

export interface SampleRequest {
  /** path and query, from the API prefix's origin */
  path: string;
  /** the whole Authorization header; none when absent */
  authorization?: string;
}

export interface Answer {
  status: number;
  body: unknown;
}

const prefix = '/api/external-api/v1';

export interface SampleSource {
  /** organizations with a key, the large one (1) first */
  keyedOrganizations: readonly number[];
  keyOf: (org: number) => string;
  /** listed orders by organization (of the keyed organizations drawn) */
  listedOrders: (org: number) => readonly number[];
  /** orders that exist but are not listed (draft, cancelled, pending) */
  unlistedOrders: readonly number[];
  /** the total of an organization's listed orders, by status filter */
  totalOf: (org: number, status: 'all' | 'finished' | 'processing') => number;
  /** a seeded draw in [0, 1) */
  random: () => number;
}

/**
 * Pages with each status, limits inside, at and outside their range, offsets from 0 to past the end;
 * invalid parameters; articles of listed orders; 404s (another organization's order, an unlisted one,
 * one that does not exist, ids that are not positive integers); 401s (no key, a malformed header, an
 * unknown key).
 */
export function sampleRequests(
  source: SampleSource,
  organizations = 8,
  ordersPerOrganization = 6,
): SampleRequest[] {
  const pick = <T>(values: readonly T[]): T => values[Math.floor(source.random() * values.length)]!;
  const orgs = [
    ...new Set([
      source.keyedOrganizations[0]!,
      source.keyedOrganizations.at(-1)!,
      ...Array.from({ length: organizations }, () => pick(source.keyedOrganizations)),
    ]),
  ];
  const requests: SampleRequest[] = [];
  const as = (org: number): string => `Bearer ${source.keyOf(org)}`;
  for (const org of orgs) {
    for (const status of ORDER_STATUS_FILTERS) {
      const total = source.totalOf(org, status);
      const statusQuery = status === 'all' ? '' : `&status=${status}`;
      const pages: [string, string][] = [
        ['', ''],
        ['1', '0'],
        ['50', '0'],
        ['200', '0'],
        ['50', '50'],
        ['7', String(Math.max(0, total - 3))],
        ['50', String(total)],
        ['0', '0'],
        ['1000', '3'],
        ['10', '-5'],
        ['50', '100000'],
      ];
      for (const [limit, offset] of pages) {
        const query = [limit === '' ? '' : `limit=${limit}`, offset === '' ? '' : `offset=${offset}`]
          .filter((p) => p !== '')
          .join('&');
        requests.push({ path: `${prefix}/orders?${query}${statusQuery}`, authorization: as(org) });
      }
    }
    const listed = source.listedOrders(org);
    for (let i = 0; i < Math.min(ordersPerOrganization, listed.length); i += 1) {
      requests.push({ path: `${prefix}/orders/${pick(listed)}/articles`, authorization: as(org) });
    }
  }
  const large = source.keyedOrganizations[0]!;
  const other = orgs.find((org) => org !== large && source.listedOrders(org).length > 0);
  requests.push(
    { path: `${prefix}/orders?status=bogus`, authorization: as(large) },
    { path: `${prefix}/orders?limit=abc`, authorization: as(large) },
    { path: `${prefix}/orders?offset=1.5`, authorization: as(large) },
    { path: `${prefix}/orders/999999999/articles`, authorization: as(large) },
    { path: `${prefix}/orders/0/articles`, authorization: as(large) },
    { path: `${prefix}/orders/abc/articles`, authorization: as(large) },
    ...source.unlistedOrders
      .slice(0, 5)
      .map((id) => ({ path: `${prefix}/orders/${id}/articles`, authorization: as(large) })),
    { path: `${prefix}/orders` },
    { path: `${prefix}/orders`, authorization: 'Basic abc' },
    { path: `${prefix}/orders`, authorization: 'Bearer not-a-key-of-anyone' },
    { path: `${prefix}/orders/1/articles`, authorization: 'Bearer not-a-key-of-anyone' },
  );
  if (other !== undefined) {
    // another organization's listed order, asked for with the large organization's key
    requests.push({
      path: `${prefix}/orders/${source.listedOrders(other)[0]!}/articles`,
      authorization: as(large),
    });
  }
  return requests;
}

export async function answerOf(origin: string, request: SampleRequest): Promise<Answer> {
  const response = await fetch(`${origin}${request.path}`, {
    headers: request.authorization === undefined ? {} : { authorization: request.authorization },
  });
  const text = await response.text();
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = text;
  }
  return { status: response.status, body };
}

/** Bytes on the wire of the answers to `requests`, asked without `Accept-Encoding` and with `br`. */
export async function encodedBytes(
  origin: string,
  requests: readonly { path: string; key: string }[],
): Promise<{ requests: number; identityBytes: number; brBytes: number; saved: number }> {
  const bytesOf = (path: string, headers: Record<string, string>): Promise<number> =>
    new Promise((resolve, reject) => {
      get(`${origin}${path}`, { headers }, (response) => {
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        response.on('end', () => resolve(bytes));
        response.on('error', reject);
      }).on('error', reject);
    });
  let identityBytes = 0;
  let brBytes = 0;
  for (const request of requests) {
    const authorization = `Bearer ${request.key}`;
    identityBytes += await bytesOf(request.path, { authorization });
    brBytes += await bytesOf(request.path, { authorization, 'accept-encoding': 'br' });
  }
  const saved = identityBytes === 0 ? 0 : Math.round((1 - brBytes / identityBytes) * 1000) / 1000;
  return { requests: requests.length, identityBytes, brBytes, saved };
}

/** Every request whose two answers differ, described; empty when all agree. */
export function differences(
  requests: readonly SampleRequest[],
  service: readonly Answer[],
  peer: readonly Answer[],
): string[] {
  const found: string[] = [];
  requests.forEach((request, i) => {
    const a = service[i];
    const b = peer[i];
    if (a === undefined || b === undefined || !isDeepStrictEqual(a, b)) {
      const shown = (answer: Answer | undefined): string => JSON.stringify(answer).slice(0, 600);
      found.push(
        `GET ${request.path} (${request.authorization ?? 'no Authorization'}):\n  service ${shown(a)}\n  peer    ${shown(b)}`,
      );
    }
  });
  return found;
}

/** Asks both origins every request, one at a time; the answers and their differences. */
export async function compareAnswers(
  serviceOrigin: string,
  peerOrigin: string,
  requests: readonly SampleRequest[],
): Promise<{ service: Answer[]; peer: Answer[]; differences: string[] }> {
  const service: Answer[] = [];
  const peer: Answer[] = [];
  for (const request of requests) {
    service.push(await answerOf(serviceOrigin, request));
    peer.push(await answerOf(peerOrigin, request));
  }
  return { service, peer, differences: differences(requests, service, peer) };
}

/** Fails with the differences listed (the first 20) when the two sides do not agree. */
export function assertSameAnswers(
  requests: readonly SampleRequest[],
  found: readonly string[],
  side = 'the peer',
): void {
  if (found.length === 0) return;
  throw new Error(
    `${side} and the service answer ${found.length} of ${requests.length} sample requests differently; no figure is measured:\n` +
      found.slice(0, 20).join('\n'),
  );
}
