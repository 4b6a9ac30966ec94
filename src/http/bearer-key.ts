import { hash } from 'node:crypto';
import { unauthorized, type ApiError } from './api-error.js';
import type { Caller } from './caller.js';

const maxKeyLength = 512;

/** One-shot `crypto.hash`: no Hash object per call (it is on every request's path). */
export function sha256Hex(value: string): string {
  return hash('sha256', value, 'hex');
}

/**
 * The caller of a request, from `Authorization: Bearer <key>`.
 * The raw key is hashed here and goes no further.
 */
export function authenticate(
  header: string | string[] | undefined,
  orgOfKeyHash: (keySha256: string) => number | null,
): Caller | ApiError {
  if (header === undefined || header === '') {
    return unauthorized('Missing Authorization header; send `Authorization: Bearer <API_KEY>`.');
  }
  if (Array.isArray(header)) return unauthorized('Send exactly one Authorization header.');
  const match = /^Bearer +(\S+) *$/i.exec(header);
  const key = match?.[1];
  if (key === undefined || key.length > maxKeyLength) {
    return unauthorized('Malformed Authorization header; expected `Bearer <API_KEY>`.');
  }
  const keySha256 = sha256Hex(key);
  const orgId = orgOfKeyHash(keySha256);
  if (orgId === null) return unauthorized('The API key is unknown or has been revoked.');
  return { orgId, keySha256 };
}
