import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { authenticate, sha256Hex } from '../../src/http/bearer-key.js';

const orgOf = (known: Record<string, number>) => (keySha256: string) => known[keySha256] ?? null;
const key = 'k'.repeat(40);
const known = orgOf({ [sha256Hex(key)]: 7, [sha256Hex('x'.repeat(512))]: 8 });
const refusal = (header: string | string[] | undefined) => {
  const answer = authenticate(header, known);
  return 'orgId' in answer ? undefined : answer;
};

describe('the Bearer key of a request', () => {
  it('hashes the key with SHA-256 and acts for the organization of that hash', () => {
    expect(sha256Hex('abc')).toBe(createHash('sha256').update('abc').digest('hex'));
    expect(authenticate(`Bearer ${key}`, known)).toEqual({ orgId: 7, keySha256: sha256Hex(key) });
    for (const header of [`bearer ${key}`, `BEARER   ${key}`, `Bearer ${key}  `]) {
      expect(authenticate(header, known), header).toEqual({ orgId: 7, keySha256: sha256Hex(key) });
    }
  });

  it('tells a missing header, several headers, a malformed one and an unknown key apart, each as 401', () => {
    for (const header of [undefined, '']) {
      expect(refusal(header)).toMatchObject({
        statusCode: 401,
        message: 'Missing Authorization header; send `Authorization: Bearer <API_KEY>`.',
      });
    }
    expect(refusal([`Bearer ${key}`, `Bearer ${key}`])).toMatchObject({
      statusCode: 401,
      message: 'Send exactly one Authorization header.',
    });
    for (const header of [
      key,
      `Basic ${key}`,
      `XBearer ${key}`,
      `Bearer${key}`,
      `Bearer ${key} more`,
      `Bearer ${key}\t`,
      'Bearer ',
    ]) {
      expect(refusal(header), header).toMatchObject({
        statusCode: 401,
        message: 'Malformed Authorization header; expected `Bearer <API_KEY>`.',
      });
    }
    expect(refusal('Bearer unknown')).toMatchObject({
      statusCode: 401,
      headers: { 'www-authenticate': 'Bearer' },
      message: 'The API key is unknown or has been revoked.',
    });
  });

  it('takes a key of up to 512 characters, and hashes none longer', () => {
    expect(authenticate(`Bearer ${'x'.repeat(512)}`, known)).toMatchObject({ orgId: 8 });
    let asked = 0;
    const answer = authenticate(`Bearer ${'x'.repeat(513)}`, () => {
      asked += 1;
      return 8;
    });
    expect(answer).toMatchObject({ message: 'Malformed Authorization header; expected `Bearer <API_KEY>`.' });
    expect(asked).toBe(0);
  });
});
