// Entry of a request thread: loads the TypeScript module through tsx, which the main thread's loader does not reach.
import { tsImport } from 'tsx/esm/api';

await tsImport('./request-thread.ts', import.meta.url);
