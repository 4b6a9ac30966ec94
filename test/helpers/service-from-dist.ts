/** Every service command of this test file runs the built service (see `built-service.ts`). */
import { useServiceRuntime } from '../../tools/harness.js';

useServiceRuntime('dist');
