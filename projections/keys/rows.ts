/** One row of `api_keys`, the keys store's table: only the SHA-256 of a key is ever stored. */
export interface ApiKeyRow {
  key_id: string;
  org_id: number | null;
  key_sha256: string | null;
  revoked: 0 | 1;
  v_at: number;
  v_sub: number;
  v_rank: 0 | 1;
  v_id: string;
}

export const apiKeyColumns = [
  'key_id',
  'org_id',
  'key_sha256',
  'revoked',
  'v_at',
  'v_sub',
  'v_rank',
  'v_id',
] as const satisfies readonly (keyof ApiKeyRow)[];
