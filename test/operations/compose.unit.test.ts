/**
 * Facts of docker-compose.yml that no engine is needed to check (CI has none; `.ci/run` validates
 * the file with `docker-compose config`): the broker the tests run, reachable from the host, its
 * data kept with the models; one image; restarts; one admin port; no replica names to callers.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { projectRoot } from '../../tools/harness.js';
import { KAFKA_VERSION } from '../../tools/local-kafka.js';

interface Service {
  image?: string;
  build?: unknown;
  restart?: string;
  ports?: string[];
  volumes?: string[];
  environment?: Record<string, string | number>;
  healthcheck?: { test: string[] };
}

const composeText = readFileSync(join(projectRoot, 'docker-compose.yml'), 'utf8');
const compose = parse(composeText, { merge: true, maxAliasCount: 100 }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const { kafka, topics, balancer } = compose.services;
const replicas = ['replica-1', 'replica-2'].map((name) => compose.services[name] as Service);

describe('docker-compose.yml', () => {
  it('runs the Kafka version the tests run, with its data in a named volume', () => {
    expect(kafka?.image).toBe(`apache/kafka:${KAFKA_VERSION}`);
    const dataDir = kafka?.environment?.['KAFKA_LOG_DIRS'];
    expect(kafka?.volumes).toEqual([`kafka-data:${dataDir}`]);
    expect(Object.keys(compose.volumes)).toContain('kafka-data');
  });

  it('publishes on the host the broker address it advertises there', () => {
    const advertised = String(kafka?.environment?.['KAFKA_ADVERTISED_LISTENERS']).split(',');
    const host = advertised.find((listener) => listener.startsWith('HOST://'));
    expect(host).toBe('HOST://localhost:29092');
    expect(kafka?.ports).toEqual(['127.0.0.1:29092:29092']);
    expect(composeText).toContain('KAFKA_BROKERS=localhost:29092 npm run demo-data');
  });

  it('builds one image, which both replicas run, and restarts what stops', () => {
    const built = Object.entries(compose.services).filter(([, service]) => service.build !== undefined);
    expect(built.map(([name]) => name)).toEqual(['topics']);
    for (const replica of replicas) {
      expect(replica.image).toBe(topics?.image);
      expect(replica.restart).toBe('unless-stopped');
    }
    expect([kafka?.restart, balancer?.restart, topics?.restart]).toEqual([
      'unless-stopped',
      'unless-stopped',
      'on-failure',
    ]);
  });

  it('gives the admin port once: the replicas and the balancer read the same value', () => {
    const ports = replicas.map((replica) => replica.environment?.['ADMIN_PORT']);
    expect(ports[0]).toMatch(/^\d+$/);
    expect([
      ports[1],
      balancer?.environment?.['REPLICA_1_ADMIN'],
      balancer?.environment?.['REPLICA_2_ADMIN'],
    ]).toEqual([ports[0], ports[0], ports[0]]);
    expect(composeText.match(new RegExp(`\\b${String(ports[0])}\\b`, 'g'))).toHaveLength(1);
    for (const replica of replicas)
      expect(replica.healthcheck?.test.join(' ')).toContain('process.env.ADMIN_PORT');
  });

  it('does not tell callers the replicas’ names (X-Replica only when BALANCER_REPLICA_HEADER is set)', () => {
    const haproxy = readFileSync(join(projectRoot, 'deploy', 'haproxy', 'haproxy.cfg'), 'utf8');
    const replicaHeader = haproxy.split('\n').filter((line) => /^\s*http-response .*X-Replica/.test(line));
    expect(replicaHeader).toEqual([
      '  http-response set-header X-Replica %s if { env(BALANCER_REPLICA_HEADER) -m found }',
    ]);
    expect(Object.keys(balancer?.environment ?? {})).not.toContain('BALANCER_REPLICA_HEADER');
  });
});
