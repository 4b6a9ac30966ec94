/**
 * The projector decodes with zod's compiled parsers (`z.compile`); they must decide and produce
 * exactly what zod's own parser does, for valid events and for every kind of broken one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventEnvelope, eventDataSchemas } from '../../schemas/events.js';
import { topicRoleOfType, type TopicRole } from '../../schemas/streams.js';
import { compiledEventSchemas, decodeEventWith } from '../../src/projector/decode.js';
import { historyArbitrary } from '../helpers/histories.js';

const runtime = { envelope: EventEnvelope, data: eventDataSchemas };

/** Values at the edges of the contract's rules, and of other types. */
const edgeValues: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  2 ** 53,
  Number.MAX_SAFE_INTEGER,
  '',
  ' ',
  'x',
  'x'.repeat(100),
  'x'.repeat(101),
  'x'.repeat(1001),
  '2026-02-29T00:00:00Z',
  '2028-02-29T00:00:00Z',
  '2026-01-01T00:00:00',
  '2026-01-01T24:00:00Z',
  '2026-01-01T00:00:00.123456789+14:00',
  '2026-01-01T00:00:00+24:00',
  '9999-12-31T23:59:59-01:00',
  '0000-01-01T00:00:00+00:01',
  ' https://www.news.example/a ',
  'https://a\tb.example/',
  'ftp://news.example/',
  'http://',
  'HTTP://NEWS.EXAMPLE/',
  `https://news.example/${'a'.repeat(2040)}`,
  'a'.repeat(64),
  'A'.repeat(64),
  'order.created',
  'article.published',
  {},
  [],
  { order_id: 1 },
];

type Json = Record<string, unknown>;

/** One change to an event: a key removed, a value replaced by an edge value, or a key added. */
interface Mutation {
  inData: boolean;
  kind: 'remove' | 'replace' | 'add';
  pick: number;
  value: unknown;
}

const mutation: fc.Arbitrary<Mutation> = fc.record({
  inData: fc.boolean(),
  kind: fc.constantFrom('remove' as const, 'replace' as const, 'add' as const),
  pick: fc.nat(),
  value: fc.constantFrom(...edgeValues),
});

function mutate(event: Json, m: Mutation): Json {
  const copy = structuredClone(event);
  const target =
    m.inData && typeof copy['data'] === 'object' && copy['data'] !== null ? (copy['data'] as Json) : copy;
  const keys = Object.keys(target);
  const key = m.kind === 'add' ? `extra_${m.pick % 3}` : keys[m.pick % Math.max(1, keys.length)];
  if (key === undefined) return copy;
  if (m.kind === 'remove') Reflect.deleteProperty(target, key);
  else target[key] = m.value;
  return copy;
}

describe('compiled decoder', () => {
  it('decides and decodes every event, valid or broken, exactly as zod does', () => {
    const scenario = historyArbitrary({ orgs: 2, orders: 4, articles: 6, keys: 2, maxEvents: 20 }).chain(
      (history) =>
        fc.tuple(
          fc.constant(history),
          fc.array(fc.array(mutation, { maxLength: 3 }), {
            minLength: history.length,
            maxLength: history.length,
          }),
        ),
    );
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(scenario, ([history, mutations]) => {
        history.forEach((event, i) => {
          const role: TopicRole = topicRoleOfType.get(event.type)!;
          const broken = (mutations[i] ?? []).reduce<Json>((e, m) => mutate(e, m), event as unknown as Json);
          for (const candidate of [event, broken]) {
            const value = Buffer.from(JSON.stringify(candidate));
            const compiled = decodeEventWith(compiledEventSchemas, role, value);
            expect(compiled).toEqual(decodeEventWith(runtime, role, value));
            if (compiled.ok) accepted += 1;
            else rejected += 1;
          }
        });
      }),
      { numRuns: 300 },
    );
    // Both sides of the contract were exercised, not only one.
    expect(accepted).toBeGreaterThan(500);
    expect(rejected).toBeGreaterThan(500);
  }, 60_000);
});
