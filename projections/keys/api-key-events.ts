/** The API key events' rules: api_key.issued writes the key, api_key.revoked leaves only its id, revoked. */
import type { ApiKeyIssued, ApiKeyRevoked } from '../../schemas/events.js';
import type { ApiKeyRow } from './rows.js';
import { newerRow } from '../facts/stamps.js';

/** What an API key event changes: the key's row after it. */
export interface ApiKeyChange {
  table: 'api_keys';
  row: ApiKeyRow;
}

export function applyApiKeyIssued(event: ApiKeyIssued, current: ApiKeyRow | undefined): ApiKeyChange | null {
  const row = newerRow<ApiKeyRow>(event, 0, current, {
    key_id: event.data.key_id,
    org_id: event.data.organization_id,
    key_sha256: event.data.key_sha256,
    revoked: 0,
  });
  return row === null ? null : { table: 'api_keys', row };
}

export function applyApiKeyRevoked(
  event: ApiKeyRevoked,
  current: ApiKeyRow | undefined,
): ApiKeyChange | null {
  const row = newerRow<ApiKeyRow>(event, 1, current, {
    key_id: event.data.key_id,
    org_id: null,
    key_sha256: null,
    revoked: 1,
  });
  return row === null ? null : { table: 'api_keys', row };
}
