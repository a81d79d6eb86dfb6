import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect } from 'node:net';
import { freePorts } from './ports.js';

const REDIS_SERVER = process.env['REDIS_SERVER_BIN'] ?? '/usr/bin/redis-server';

/** A private redis-server child on its own port: tests never touch a shared Redis's state. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  /** SIGTERM, and wait for the process to exit. */
  stop(): Promise<void>;
}

/**
 * Start redis-server (Debian's package; `REDIS_SERVER_BIN` for another binary) keeping nothing
 * on disk. `port`: a given port, to bring a stopped server back where its clients reconnect.
 */
export async function startRedisServer(options: { port?: number } = {}): Promise<RedisServer> {
  if (!existsSync(REDIS_SERVER)) {
    throw new Error(
      `redis-server not found at ${REDIS_SERVER}; install redis-server (apt-get install redis-server) or set REDIS_SERVER_BIN.`,
    );
  }
  const port = options.port ?? (await freePorts(1))[0]!;
  const child: ChildProcess = spawn(
    REDIS_SERVER,
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  const deadline = Date.now() + 10_000;
  while (!(await answersPing(port))) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`redis-server on port ${port} did not answer PING within 10 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/** One inline PING over a plain socket: the harness needs no Redis client. */
function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.once('data', (data) => done(data.toString().startsWith('+PONG')));
  });
}
