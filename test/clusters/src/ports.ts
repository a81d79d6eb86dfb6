import { createServer, type Server } from 'node:net';

// Ports of services that machines of this project run before a session; a test cluster must
// never take one of them, even if it happens to be free right now.
const RESERVED = new Set([5432, 3306, 6379, 5672, 1883, 4222, 33060]);

// Ports handed out by this process. The OS may return a port again as soon as our probe socket
// closes, before the server we chose it for has bound it; remembering them avoids giving the
// same port to two nodes started close together.
const handedOut = new Set<number>();

function listen(host: string): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen({ host, port: 0, exclusive: true }, () => resolve(server));
  });
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => server.close(() => resolve()));
}

/**
 * Find `count` distinct free TCP ports on `host` by binding port 0. All probe sockets stay open
 * until every port is chosen, so the OS cannot return the same one twice.
 */
export async function freePorts(count: number, host = '127.0.0.1'): Promise<number[]> {
  const held: Server[] = [];
  const ports: number[] = [];
  try {
    let attempts = 0;
    while (ports.length < count) {
      if (++attempts > count * 50) throw new Error(`could not find ${count} free ports on ${host}`);
      const server = await listen(host);
      held.push(server);
      const address = server.address();
      if (address === null || typeof address === 'string') continue;
      if (RESERVED.has(address.port) || handedOut.has(address.port)) continue;
      ports.push(address.port);
    }
  } finally {
    await Promise.all(held.map(close));
  }
  for (const port of ports) handedOut.add(port);
  return ports;
}

export async function freePort(host = '127.0.0.1'): Promise<number> {
  const [port] = await freePorts(1, host);
  return port!;
}
