/**
 * The randomized fault campaign (tools/campaign/), short: a few seeds, a minute or so each, on a
 * broker and replicas of its own. `npm run campaign -- --seed N --minutes M` runs a long one.
 */
import { describe, expect, it } from 'vitest';
import { formatReport, runCampaign } from '../../tools/campaign/campaign.js';

const seeds = (process.env['CAMPAIGN_SEEDS'] ?? '11,12').split(',').map(Number);
const minutes = Number(process.env['CAMPAIGN_MINUTES'] ?? 1);

describe('the randomized fault campaign', () => {
  for (const seed of seeds) {
    it(
      `keeps every promise through the operations drawn by seed ${seed}`,
      async () => {
        const report = await runCampaign({ seed, minutes, steps: 100_000 });
        console.log(formatReport(report));
        expect(report.steps.length).toBeGreaterThan(5);
        expect(report.violations).toEqual([]);
      },
      (minutes * 60 + 300) * 1000,
    );
  }
});
