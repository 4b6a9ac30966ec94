/**
 * Obtains one Kafka broker for the whole test run, in this order:
 * 1. KAFKA_BROKERS when set;
 * 2. a testcontainers Kafka container when a Docker engine answers;
 * 3. the project's own single-node KRaft broker (tools/local-kafka.ts).
 * If none can be had the run fails and says how to provide one.
 */
import type { TestProject } from 'vitest/node';
import { startLocalBroker, stopLocalBroker, KAFKA_VERSION } from '../../tools/local-kafka.js';

declare module 'vitest' {
  export interface ProvidedContext {
    kafkaBrokers: string;
  }
}

const containerImage = 'confluentinc/cp-kafka:7.9.0';

async function dockerAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fromEnv = process.env['KAFKA_BROKERS'];
  if (fromEnv !== undefined && fromEnv !== '') {
    console.log(`[kafka] using KAFKA_BROKERS=${fromEnv}`);
    project.provide('kafkaBrokers', fromEnv);
    return () => Promise.resolve();
  }

  if (await dockerAnswers()) {
    const { KafkaContainer } = await import('@testcontainers/kafka');
    const started = Date.now();
    const container = await new KafkaContainer(containerImage).withKraft().start();
    const brokers = `${container.getHost()}:${container.getMappedPort(9093)}`;
    console.log(`[kafka] testcontainers ${containerImage} at ${brokers} in ${Date.now() - started} ms`);
    project.provide('kafkaBrokers', brokers);
    return async () => {
      await container.stop();
    };
  }

  let broker;
  try {
    broker = await startLocalBroker();
  } catch (error) {
    throw new Error(
      'No Kafka broker for the integration tests. Provide one of: KAFKA_BROKERS=host:port; a running Docker engine ' +
        '(testcontainers); or Java 17+ and Maven with access to Maven Central (the project starts Apache Kafka ' +
        `${KAFKA_VERSION} itself). Cause: ${error instanceof Error ? error.message : String(error)}`,
    );
  }
  console.log(
    `[kafka] local Apache Kafka ${KAFKA_VERSION} at ${broker.brokers}: jars ready in ${broker.jarsMs} ms, broker up in ${broker.startupMs} ms`,
  );
  project.provide('kafkaBrokers', broker.brokers);
  const running = broker;
  return async () => {
    await stopLocalBroker(running);
  };
}
