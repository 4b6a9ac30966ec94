/**
 * The plans of the peer's statements on its loaded database, as PostgreSQL ran them:
 * `EXPLAIN (ANALYZE, BUFFERS)` of each statement of the API with parameters of the benchmark's loads,
 * once with a custom plan (planned for those values) and once with the generic plan node-postgres's
 * named statements may settle on after five executions (`plan_cache_mode = force_generic_plan`).
 * Each statement runs once before it is explained, so that the figures are of a warm cache.
 */
import { articlesSql, orgOfKeySql, pageSql } from './api.js';
import type { PeerDesign } from './schema.js';
import type { PeerPostgres } from './server.js';

export interface ExplainCase {
  name: string;
  sql: string;
  values: unknown[];
}

export function explainCases(
  design: PeerDesign,
  params: { largeOrg: number; smallOrg: number; deepOffset: number; order: number; keySha256: string },
): ExplainCase[] {
  const pages = pageSql[design];
  return [
    { name: 'page of the large organization', sql: pages.all, values: [params.largeOrg, 50, 0] },
    { name: 'page of a small organization', sql: pages.all, values: [params.smallOrg, 50, 0] },
    {
      name: 'page of the large organization, status finished',
      sql: pages.byStatus,
      values: [params.largeOrg, 50, 0, 'finished'],
    },
    {
      name: `page of the large organization at offset ${params.deepOffset}`,
      sql: pages.all,
      values: [params.largeOrg, 50, params.deepOffset],
    },
    { name: 'articles of an order', sql: articlesSql, values: [params.order, params.largeOrg] },
    { name: 'organization of a key', sql: orgOfKeySql, values: [params.keySha256] },
  ];
}

export interface ExplainedCase {
  name: string;
  /** by plan mode: the plan, as PostgreSQL prints it */
  custom: string;
  generic: string;
}

export async function explain(
  postgres: PeerPostgres,
  database: string,
  cases: readonly ExplainCase[],
): Promise<ExplainedCase[]> {
  const explained: ExplainedCase[] = [];
  const run = async (mode: 'custom' | 'generic', c: ExplainCase, i: number): Promise<string> => {
    const name = `bench_explain_${mode}_${i}`;
    await postgres.query(database, `SET plan_cache_mode = force_${mode}_plan`);
    await postgres.query(database, `PREPARE ${name} AS ${c.sql}`);
    const args = c.values.map((v) => (typeof v === 'string' ? `'${v.replaceAll("'", "''")}'` : String(v)));
    const execute = `EXECUTE ${name}(${args.join(', ')})`;
    await postgres.query(database, execute);
    const rows = await postgres.query<{ 'QUERY PLAN': string }>(
      database,
      `EXPLAIN (ANALYZE, BUFFERS) ${execute}`,
    );
    await postgres.query(database, `DEALLOCATE ${name}`);
    return rows.map((row) => row['QUERY PLAN']).join('\n');
  };
  try {
    for (const [i, c] of cases.entries())
      explained.push({
        name: c.name,
        custom: await run('custom', c, i),
        generic: await run('generic', c, i),
      });
  } finally {
    await postgres.query(database, 'RESET plan_cache_mode');
  }
  return explained;
}

/** The plans as text: a file a reader can open beside the results. */
export function explainText(title: string, explained: readonly ExplainedCase[]): string {
  return [
    `# ${title}`,
    ...explained.flatMap((c) => [
      '',
      `## ${c.name}`,
      '',
      '### custom plan',
      '',
      c.custom,
      '',
      '### generic plan (plan_cache_mode = force_generic_plan)',
      '',
      c.generic,
    ]),
    '',
  ].join('\n');
}
