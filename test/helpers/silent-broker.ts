/**
 * A broker that accepts connections and answers nothing, as a frozen broker does (SIGSTOP leaves
 * the kernel accepting): on a loopback port, closed with every connection after the test file.
 * Call it at the top of a test file, where `afterAll` may be registered.
 */
import { createServer, type Socket } from 'node:net';
import { afterAll } from 'vitest';

export interface SilentBroker {
  /** `127.0.0.1:<port>` */
  address: string;
  /** the connections it has accepted */
  sockets: ReadonlySet<Socket>;
}

export async function silentBroker(): Promise<SilentBroker> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return { address: `127.0.0.1:${address.port}`, sockets };
}
