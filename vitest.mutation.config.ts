/**
 * The vitest configuration Stryker runs (`npm run test:mutation`): the `unit` project's tests only,
 * as one project (the Stryker vitest runner has no option to pick a project).
 */
import { defineConfig } from 'vitest/config';
import { unitTests } from './vitest.config.js';

export default defineConfig({ test: unitTests });
