/**
 * A realistic, seeded, reproducible sample data set: many organizations with a
 * skewed (Zipf-like) number of orders, members, status histories and articles.
 * The same seed always yields the same events. A development tool, not part of the image:
 *   npm run demo-data -- [--seed N] [--orgs N] [--orders N]   (the service's environment: KAFKA_BROKERS, TOPIC_*)
 */
import { parseArgs } from 'node:util';
import type { DomainEvent } from '../schemas/events.js';
import { withPublisher, type CommandContext } from '../src/cli/commands.js';
import { progressReporter } from '../src/cli/progress.js';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/logger.js';
import { isEntryPoint } from './harness.js';

export interface DemoDataOptions {
  seed: number;
  organizations: number;
  orders: number;
  /** average articles per listed order */
  articlesPerOrder: number;
  /** first order id, so repeated runs can add data without colliding */
  firstOrderId?: number;
  /** fix the size of organization 1 (the benchmark's large organization) */
  largestOrganizationOrders?: number;
}

/** mulberry32: a small, fast, seedable PRNG */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

const topics: readonly [string, ...string[]] = [
  'Quarterly results',
  'Product launch',
  'Partnership',
  'New office',
  'Award',
  'Appointment',
  'Funding round',
];
const outlets: readonly [string, ...string[]] = [
  'www.dailywire.example',
  'news.example',
  'www.tech-times.example',
  'markets.example',
  'www.citypost.example',
];
const base = Date.UTC(2026, 0, 1);

/** Organization sizes: org k gets a share proportional to 1/k (Zipf, s = 1). */
function organizationOf(random: () => number, organizations: number): number {
  const harmonic = Math.log(organizations) + 0.5772;
  const u = random() * harmonic;
  let k = Math.max(1, Math.floor(Math.exp(u - 0.5772)));
  if (k > organizations) k = organizations;
  return k;
}

function pick(random: () => number, list: readonly [string, ...string[]]): string {
  return list[Math.floor(random() * list.length)] ?? list[0];
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** Every event of the data set, lazily, in a plausible publication order per order. */
export function* demoEvents(options: DemoDataOptions): Generator<DomainEvent, void, undefined> {
  const random = seededRandom(options.seed);
  const firstOrderId = options.firstOrderId ?? 1;
  let articleId = firstOrderId * 10;
  let largest = options.largestOrganizationOrders ?? 0;
  for (let i = 0; i < options.orders; i += 1) {
    const orderId = firstOrderId + i;
    const org = largest > 0 ? 1 : organizationOf(random, options.organizations);
    if (largest > 0) largest -= 1;
    const createdMs = base + Math.floor(random() * 300 * 86_400_000);
    const scheduled = random() < 0.4 ? createdMs + Math.floor(random() * 7 * 86_400_000) : null;
    let at = createdMs;
    const id = (suffix: string): string => `demo-${options.seed}-${orderId}-${suffix}`;
    const roll = random();
    const finalStatus =
      roll < 0.55
        ? 'finished'
        : roll < 0.75
          ? 'publishing'
          : roll < 0.85
            ? 'publishing_ended'
            : roll < 0.95
              ? 'draft'
              : 'cancelled';
    yield {
      event_id: id('created'),
      type: 'order.created',
      occurred_at: iso(at),
      data: {
        order_id: orderId,
        organization_id: org,
        member_id: org * 100 + Math.floor(random() * 5),
        press_release_title: `${pick(random, topics)} #${orderId}`,
        status: finalStatus === 'draft' || finalStatus === 'cancelled' ? 'draft' : 'pending',
        distribution_date: scheduled === null ? null : iso(scheduled),
        created_at: iso(createdMs),
      },
    };
    const path =
      finalStatus === 'finished'
        ? ['publishing', 'publishing_ended', 'finished']
        : finalStatus === 'publishing_ended'
          ? ['publishing', 'publishing_ended']
          : finalStatus === 'publishing'
            ? ['publishing']
            : finalStatus === 'cancelled'
              ? ['cancelled']
              : [];
    for (const [step, status] of path.entries()) {
      at += 60_000 + Math.floor(random() * 3_600_000);
      yield {
        event_id: id(`status-${step}`),
        type: 'order.status_changed',
        occurred_at: iso(at),
        data: { order_id: orderId, status },
      };
    }
    if (path.includes('publishing')) {
      const count = Math.floor(random() * options.articlesPerOrder * 2 + 0.5);
      for (let a = 0; a < count; a += 1) {
        articleId += 1;
        const outlet = pick(random, outlets);
        const published = at + Math.floor(random() * 86_400_000);
        yield {
          event_id: id(`article-${a}`),
          type: 'article.published',
          occurred_at: iso(published),
          data: {
            article_id: articleId,
            order_id: orderId,
            article_url: `https://${outlet}/press/${orderId}-${a}`,
            published_at: iso(published),
          },
        };
      }
    }
    if (random() < 0.1) {
      yield {
        event_id: id('retitled'),
        type: 'order.updated',
        occurred_at: iso(at + 1000),
        data: { order_id: orderId, press_release_title: `Updated: press release #${orderId}` },
      };
    }
  }
}

export async function publishDemoData(
  ctx: CommandContext,
  options: { seed: number; organizations: number; orders: number },
): Promise<void> {
  const progress = progressReporter('demo-data', ctx.logger, 'orders');
  const published = await withPublisher(ctx, async (publisher) => {
    let orders = 0;
    for (const event of demoEvents({ ...options, articlesPerOrder: 5 })) {
      await publisher.add(event);
      if (event.type === 'order.created') {
        orders += 1;
        if (orders % 1000 === 0) progress.update(orders, options.orders);
      }
    }
    progress.update(orders, options.orders);
  });
  progress.stop();
  ctx.print(
    `Published ${published} events for ${options.orders} orders across up to ${options.organizations} organizations (seed ${options.seed}). Organization 1 has the most orders.`,
  );
}

if (isEntryPoint(import.meta.url)) {
  const count = (name: string, value: string | undefined, fallback: number): number => {
    const n = value === undefined ? fallback : Number(value);
    if (!Number.isSafeInteger(n) || n < 1) {
      console.error(`--${name} must be a positive integer, got "${value}"`);
      process.exit(2);
    }
    return n;
  };
  const usage = 'usage: npm run demo-data -- [--seed N] [--orgs N] [--orders N]';
  let values: { seed?: string | undefined; orgs?: string | undefined; orders?: string | undefined } = {};
  try {
    ({ values } = parseArgs({
      options: { seed: { type: 'string' }, orgs: { type: 'string' }, orders: { type: 'string' } },
    }));
  } catch (error) {
    console.error(`${error instanceof Error ? error.message : String(error)}\n${usage}`);
    process.exit(2);
  }
  const options = {
    seed: count('seed', values.seed, 42),
    organizations: count('orgs', values.orgs, 50),
    orders: count('orders', values.orders, 2000),
  };
  const config = loadConfig(process.env);
  const logger = createLogger(config.logLevel);
  publishDemoData({ config, logger, print: (line) => console.log(line) }, options).catch((error: unknown) => {
    console.error(error instanceof Error ? error.message : error);
    process.exit(1);
  });
}
