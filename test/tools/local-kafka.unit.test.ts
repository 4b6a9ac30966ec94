import { describe, expect, it } from 'vitest';
import { clusterId } from '../../tools/local-kafka.js';

describe('the local broker script', () => {
  it('draws cluster ids of 22 URL-safe base64 characters that never start with "-"', () => {
    // One draw in 64 of plain base64url starts with "-"; 10 000 draws all but
    // certainly contain such ids if the rule is broken.
    const ids = Array.from({ length: 10_000 }, clusterId);
    for (const id of ids) expect(id).toMatch(/^[A-Za-z0-9_][A-Za-z0-9_-]{21}$/);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
