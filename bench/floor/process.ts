/** The floor's processes, started and stopped from outside (bench:floor, its test). */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { projectRoot } from '../../tools/harness.js';
import { freePort } from '../../tools/local-kafka.js';
import { keysFile } from '../../src/keys/keys-files.js';
import { ModelFiles } from '../../src/read-model/files.js';
import type { PeerRuntime } from '../peers/postgres/process.js';
import type { FloorKind } from './servers.js';

/** Compiled with the peer (`buildPeer`, bench/peers/tsconfig.build.json). */
const builtEntry = join(projectRoot, 'dist', 'peer', 'bench', 'floor', 'main.js');

export interface FloorProcess {
  kind: FloorKind;
  child: ChildProcess;
  origin: string;
  stop: () => Promise<void>;
}

/**
 * A floor server on the files the service in `dataDir` serves: its current model file and its keys
 * store. `env`: more variables for its process (bench:profile's `NODE_OPTIONS`).
 */
export async function startFloorProcess(
  kind: FloorKind,
  dataDir: string,
  runtime: PeerRuntime,
  env: Record<string, string> = {},
): Promise<FloorProcess> {
  const modelFile = new ModelFiles(dataDir).currentFile();
  if (modelFile === null) throw new Error(`no model file in ${dataDir} for the floor to serve`);
  const port = await freePort();
  const entry =
    runtime === 'dist' ? [builtEntry] : ['--import', 'tsx', join(projectRoot, 'bench', 'floor', 'main.ts')];
  const child = spawn(process.execPath, [...entry, String(port), modelFile, keysFile(dataDir), kind], {
    cwd: projectRoot,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env['PATH'], HOME: process.env['HOME'], ...env },
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  await new Promise<void>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('listening')) resolve();
    });
    void exited.then((code) =>
      reject(new Error(`the ${kind} server exited ${code} before it listened: ${out}`)),
    );
  });
  return {
    kind,
    child,
    origin: `http://127.0.0.1:${port}`,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
