import type { Admin, Kafka } from 'kafkajs';

/** Runs `work` with a connected admin client, disconnected afterwards whatever happens. */
export async function withAdmin<T>(kafka: Kafka, work: (admin: Admin) => Promise<T>): Promise<T> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    return await work(admin);
  } finally {
    await admin.disconnect();
  }
}
