/**
 * The floor's process (`process.ts` starts it):
 *   main.js PORT MODEL_FILE KEYS_FILE floor|fastify-bare
 * Serves the External Orders API's two GET routes from the service's model and keys files, read-only,
 * on 127.0.0.1:PORT, and prints `listening`.
 */
import { floorAnswers } from './answers.js';
import { fastifyBareServer, floorKinds, nodeFloorServer, type FloorKind } from './servers.js';

const [port, modelFile, keysFile, kind] = process.argv.slice(2);
if (modelFile === undefined || keysFile === undefined || !floorKinds.includes(kind as FloorKind)) {
  console.error(`usage: main.js PORT MODEL_FILE KEYS_FILE ${floorKinds.join('|')}`);
  process.exit(2);
}
const answers = floorAnswers(modelFile, keysFile);
if (kind === 'floor') {
  const server = nodeFloorServer(answers);
  await new Promise<void>((resolve) => server.listen(Number(port ?? 0), '127.0.0.1', resolve));
  process.once('SIGTERM', () => server.close(() => process.exit(0)));
} else {
  const app = fastifyBareServer(answers);
  await app.listen({ host: '127.0.0.1', port: Number(port ?? 0) });
  process.once('SIGTERM', () => void app.close().then(() => process.exit(0)));
}
console.log('listening');
