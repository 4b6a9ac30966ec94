/** The topics' commands: create them keeping every event, make existing ones keep it, accept a loss. */
import { forgetfulSettings, keepEveryEvent, type TopicCreation } from '../kafka/retention.js';
import { ModelFiles } from '../read-model/files.js';
import { withKafka, type CommandContext } from './commands.js';

/**
 * Creates the topics that do not exist yet, keeping every event (`kafka/retention.ts`), and says of
 * the existing ones whether they keep every event, with the command that makes them.
 */
export async function createTopics(ctx: CommandContext, creation: TopicCreation): Promise<void> {
  const topics = Object.values(ctx.config.topics);
  const { created, retention } = await withKafka(ctx, async (kafka) => ({
    created: await kafka.createTopics(topics, creation),
    retention: await kafka.topicRetention(topics),
  }));
  ctx.print(
    created.length === 0
      ? 'All topics exist.'
      : `Created ${created.join(', ')} with ${creation.partitions} partitions, keeping every event.`,
  );
  for (const topic of retention) {
    const forgets = forgetfulSettings(topic);
    if (forgets.length > 0)
      ctx.print(
        `${topic.topic} forgets events (${forgets.join(', ')}): a rebuild needs every event; run: topics retain`,
      );
  }
}

/** Sets every topic to keep every event from now on; events already deleted stay deleted. */
export async function retainTopics(ctx: CommandContext): Promise<void> {
  const topics = Object.values(ctx.config.topics);
  await withKafka(ctx, (kafka) => kafka.retainEveryEvent(topics));
  ctx.print(`${topics.join(', ')} keep every event from now on (${retentionText()}).`);
}

const retentionText = (): string =>
  Object.entries(keepEveryEvent)
    .map(([name, value]) => `${name}=${value}`)
    .join(', ');

/**
 * Records an operator's acceptance that a partition's events below `below` are gone from the topic
 * for good: builds may then start at a log start up to that offset (`kafka/history.ts`).
 */
export function acceptHistoryLoss(
  ctx: CommandContext,
  loss: { topic: string; partition: number; below: number; reason: string; by: string },
): void {
  if (!Object.values(ctx.config.topics).includes(loss.topic))
    throw new Error(
      `${loss.topic} is not one of the configured topics (${Object.values(ctx.config.topics).join(', ')})`,
    );
  const added = new ModelFiles(ctx.config.dataDir).recordAcceptedLoss({
    ...loss,
    at: new Date().toISOString(),
  });
  ctx.print(
    `${added ? 'Recorded' : 'Already recorded'}: ${loss.topic} partition ${loss.partition} may be built from a log starting at up to offset ${loss.below}; events below it are accepted as lost (by ${loss.by}: ${loss.reason}).`,
  );
}
