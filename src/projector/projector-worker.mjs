// Entry of the projector thread: loads the TypeScript worker through tsx, which the main thread's loader does not reach.
import { tsImport } from 'tsx/esm/api';

await tsImport('./projector-worker.ts', import.meta.url);
