// Entry of the catch-up replay's thread: loads the TypeScript worker through tsx, which the main thread's loader does not reach.
import { tsImport } from 'tsx/esm/api';

await tsImport('./replay-worker.ts', import.meta.url);
