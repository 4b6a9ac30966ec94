/**
 * Positions as a caller handles them (`X-Read-Position`): the opaque tokens answers carry, and the
 * positions a publisher builds from what its producer got back (`topic=…;partition=…;offset=…`),
 * compared the way the service compares them (a partition not named counts as 0).
 */
import { parseBuiltPosition } from '../../src/http/position-built.js';
import { parsePositionToken, type RequiredPosition } from '../../src/http/position.js';
import { topicIdOf } from '../../src/http/position-token.js';

/** A record the broker acknowledged: where the campaign's producer was told it lies. */
export interface AckedRecord {
  topic: string;
  partition: number;
  offset: number;
}

/** The `X-Read-Position` a publisher builds for the records it published. */
export function builtPosition(records: readonly AckedRecord[]): string {
  return records.map((r) => `topic=${r.topic};partition=${r.partition};offset=${r.offset}`).join(',');
}

/** What a presented header requires (a token or a built position), or null when it is neither. */
export function requiredOf(header: string): RequiredPosition | null {
  return header.includes('=') ? (parseBuiltPosition(header)?.required ?? null) : parsePositionToken(header);
}

/** True when `have` has reached every offset `need` names. */
export function covers(have: RequiredPosition, need: RequiredPosition): boolean {
  for (const [id, offsets] of need) {
    const mine = have.get(id);
    for (let p = 0; p < offsets.length; p += 1) if ((mine?.[p] ?? 0) < (offsets[p] ?? 0)) return false;
  }
  return true;
}

/** The same position: each covers the other. */
export function samePosition(a: RequiredPosition, b: RequiredPosition): boolean {
  return covers(a, b) && covers(b, a);
}

export { topicIdOf };

/** True when `have` has read `topic`'s partition beyond `offset` (the record at `offset` applied). */
export function coversRecord(have: RequiredPosition, record: AckedRecord): boolean {
  return (have.get(topicIdOf(record.topic))?.[record.partition] ?? 0) > record.offset;
}

/**
 * The position an answer gave, checked against the one presented: a detail for a violation when
 * the answer has none, one that is no token, or one behind what was presented; else the position.
 */
export function givenPosition(
  header: string | string[] | undefined,
  presented: string | null,
): { position: RequiredPosition; token: string } | { problem: string } {
  if (typeof header !== 'string') return { problem: 'an answer without X-Read-Position' };
  const position = parsePositionToken(header);
  if (position === null) return { problem: `an X-Read-Position that is no token: ${header.slice(0, 80)}` };
  const need = presented === null ? null : requiredOf(presented);
  if (need !== null && !covers(position, need))
    return {
      problem: `answered at ${describe(position)}, behind the position presented (${describe(need)})`,
    };
  return { position, token: header };
}

/** A position as text for a report: each topic id's next offsets. */
export function describe(position: RequiredPosition): string {
  return [...position].map(([id, offsets]) => `${id}:[${offsets.join(',')}]`).join(' ');
}
