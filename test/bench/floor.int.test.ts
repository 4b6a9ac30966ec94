/**
 * The floor of bench:floor (bench/floor): the bare `node:http` server and Fastify-bare answer every
 * sample request of the benchmark as the service does, status and body, on the service's own model
 * and keys files; and an answer that differs is reported.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, inject, it } from 'vitest';
import { sampleSourceOf } from '../../bench/peer.js';
import {
  benchKeyOf,
  createBenchTopics,
  endOffsetsVia,
  kafkaOf,
  publishBenchData,
  startServiceProcess,
  waitUntil,
  type BenchData,
} from '../../bench/lib.js';
import { answerOf, compareAnswers, differences, sampleRequests } from '../../bench/peers/compare.js';
import { startFloorProcess } from '../../bench/floor/process.js';
import { floorKinds } from '../../bench/floor/servers.js';
import { ModelFiles } from '../../src/read-model/files.js';
import { appliedMessages, topicEndOffsets } from '../../tools/model-progress.js';

describe('the floor (bench/floor)', () => {
  it('answers every sample request as the service does, on both servers', async () => {
    const brokers = inject('kafkaBrokers');
    const kafka = kafkaOf(brokers);
    const topics = await createBenchTopics(kafka, `floor-test-${Date.now()}`);
    const data: BenchData = { orders: 400, organizations: 10, largeOrganizationOrders: 80, seed: 5 };
    await publishBenchData(kafka, topics, data);
    const dir = mkdtempSync(join(tmpdir(), 'floor-test-'));
    const dataDir = join(dir, 'data');
    const service = await startServiceProcess(brokers, topics, dataDir);
    try {
      const total = await topicEndOffsets(endOffsetsVia(kafka), Object.values(topics));
      await waitUntil('the service has caught up', () => appliedMessages(dataDir) >= total, 30_000);
      const modelFile = new ModelFiles(dataDir).currentFile()!;
      const requests = sampleRequests(sampleSourceOf(modelFile, data));
      const serviceOrigin = `http://127.0.0.1:${service.httpPort}`;
      for (const kind of floorKinds) {
        const floor = await startFloorProcess(kind, dataDir, 'source');
        try {
          const compared = await compareAnswers(serviceOrigin, floor.origin, requests);
          expect(compared.differences, kind).toEqual([]);
          // the sample holds every kind of answer: pages, articles, 401, 404, 422
          const statuses = new Set(compared.peer.map((answer) => answer.status));
          expect([...statuses].sort()).toEqual([200, 401, 404, 422]);
          const page = compared.peer.findIndex(
            (a) => a.status === 200 && ((a.body as { data?: unknown[] }).data?.length ?? 0) > 0,
          );
          expect(page).toBeGreaterThanOrEqual(0);
          // an altered title is a difference the check reports
          const altered = compared.peer.map((answer, i) =>
            i === page ? { ...answer, body: structuredClone(answer.body) } : answer,
          );
          (altered[page]!.body as { data: { id: number }[] }).data[0]!.id += 1;
          expect(differences(requests, compared.service, altered)).toHaveLength(1);
          // the same bytes, not only the same JSON value, for a page of orders
          const path = '/api/external-api/v1/orders?limit=50';
          const headers = { authorization: `Bearer ${benchKeyOf(1)}` };
          const [fromService, fromFloor] = await Promise.all(
            [serviceOrigin, floor.origin].map(async (origin) => {
              const response = await fetch(`${origin}${path}`, { headers });
              return { type: response.headers.get('content-type'), text: await response.text() };
            }),
          );
          expect(fromFloor).toEqual(fromService);
          // an unknown route: 401 without a key, 404 with one, as the service answers
          for (const authorization of [undefined, `Bearer ${benchKeyOf(1)}`]) {
            const request = {
              path: '/api/external-api/v1/nothing',
              ...(authorization === undefined ? {} : { authorization }),
            };
            expect(await answerOf(floor.origin, request)).toEqual(await answerOf(serviceOrigin, request));
          }
        } finally {
          await floor.stop();
        }
      }
    } finally {
      await service.stop();
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
