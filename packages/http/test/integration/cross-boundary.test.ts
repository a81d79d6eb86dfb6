import { randomBytes } from 'node:crypto';
import { type Cluster, freePorts, startCluster } from '@tidemark/test-clusters';
import { Job, Queue, QueueEvents } from 'bullmq';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRedis, type TestRedis } from '../../../redis/test/support/redis-server.js';
import { type Child, startScript } from './processes.js';
import { QUEUE } from './wiring.js';

// Real components: PostgreSQL 15 primary + 1 replica (replay paused), a private redis-server,
// four app instances (two with the Redis store, two without) and one BullMQ worker process.
let cluster: Cluster;
let redis: TestRedis;
const children: Child[] = [];
const ports = { store1: 0, store2: 0, plain1: 0, plain2: 0 };
let queue: Queue;
let queueEvents: QueueEvents;

const secrets = {
  TOKEN_SECRET: randomBytes(32).toString('hex'),
  OLD_TOKEN_SECRET: randomBytes(32).toString('hex'),
};

beforeAll(async () => {
  cluster = await startCluster('pg15', { replicas: 1 });
  redis = await startRedis();
  const client = new pg.Client(cluster.primary().url);
  await client.connect();
  await client.query(
    'CREATE TABLE orders (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, customer text NOT NULL, note text NOT NULL)',
  );
  await client.end();
  await waitForReplica(cluster);
  const replica = cluster.replicas()[0];
  if (!replica) throw new Error('cluster has no replica');
  const common = {
    ...secrets,
    PRIMARY_URL: cluster.primary().url,
    REPLICA_URL: replica.url,
    REDIS_PORT: String(redis.port),
  };
  for (const name of Object.keys(ports) as Array<keyof typeof ports>)
    ports[name] = (await freePorts(1))[0]!;
  const started = await Promise.all([
    startScript('app.ts', { ...common, PORT: String(ports.store1), USE_STORE: '1' }, /listening/),
    startScript('app.ts', { ...common, PORT: String(ports.store2), USE_STORE: '1' }, /listening/),
    startScript('app.ts', { ...common, PORT: String(ports.plain1), USE_STORE: '0' }, /listening/),
    startScript('app.ts', { ...common, PORT: String(ports.plain2), USE_STORE: '0' }, /listening/),
    startScript('worker.ts', common, /worker ready/),
  ]);
  children.push(...started);
  const connection = { host: '127.0.0.1', port: redis.port };
  queue = new Queue(QUEUE, { connection });
  queueEvents = new QueueEvents(QUEUE, { connection });
  await queueEvents.waitUntilReady();
  await cluster.pauseReplay(replica.name);
}, 180_000);

afterAll(async () => {
  await queueEvents?.close();
  await queue?.close();
  await Promise.all(children.map((child) => child.stop()));
  await redis?.stop();
  await cluster?.teardown();
});

interface OrdersPage {
  ids: number[];
  target: string;
  reason: string;
}

async function placeOrder(port: number, user: string, query = '', cookie?: string) {
  const response = await fetch(`http://127.0.0.1:${port}/orders${query}`, {
    method: 'POST',
    headers: { 'x-user': user, 'content-type': 'application/json', ...(cookie ? { cookie } : {}) },
    body: '{}',
  });
  expect(response.status).toBe(201);
  const body = (await response.json()) as { id: number; jobId?: string };
  return {
    ...body,
    setCookie: response.headers.get('set-cookie'),
    header: response.headers.get('x-tidemark-token'),
  };
}

async function myOrders(port: number, user: string, headers: Record<string, string> = {}) {
  const response = await fetch(`http://127.0.0.1:${port}/my/orders`, {
    headers: { 'x-user': user, ...headers },
  });
  expect(response.status).toBe(200);
  return {
    page: (await response.json()) as OrdersPage,
    setCookie: response.headers.get('set-cookie'),
  };
}

async function metrics(
  port: number,
): Promise<{ badTokens: Record<string, number>; rejected: number }> {
  return (await (await fetch(`http://127.0.0.1:${port}/_metrics`)).json()) as {
    badTokens: Record<string, number>;
    rejected: number;
  };
}

describe('tokens across app instances, devices and jobs (pg15, replay paused)', () => {
  it('device B on instance 2 sees device A’s write on instance 1 through the Redis store', async () => {
    const write = await placeOrder(ports.store1, 'alice');
    expect(write.setCookie).toMatch(
      /^tidemark=tm1~[^;]+; Max-Age=306; Path=\/; HttpOnly; SameSite=Lax$/,
    );
    expect(write.header).toMatch(/^tm1~/);
    const { page } = await myOrders(ports.store2, 'alice'); // no cookie: another device
    expect(page.ids).toContain(write.id);
    expect(page.target).toBe('primary');
  });

  it('CONTROL: without the store, device B misses the write (the replica is paused)', async () => {
    const write = await placeOrder(ports.plain1, 'bob');
    const { page } = await myOrders(ports.plain2, 'bob');
    expect(page.ids).not.toContain(write.id);
    expect(page.target).toBe('r1');
    // Device A itself carries the signed cookie to the other instance and does see it.
    const cookie = (write.setCookie ?? '').split(';')[0] ?? '';
    const own = await myOrders(ports.plain2, 'bob', { cookie });
    expect(own.page.ids).toContain(write.id);
  });

  it('a job enqueued right after a write reads it in the worker process; unstamped control misses', async () => {
    const stamped = await placeOrder(ports.plain1, 'carol', '?job=1');
    const control = await placeOrder(ports.plain1, 'dave', '?job=1&stamp=0');
    const stampedResult = await finished(stamped.jobId);
    const controlResult = await finished(control.jobId);
    expect(stampedResult.ids).toContain(stamped.id);
    expect(stampedResult.target).toBe('primary');
    expect(controlResult.ids).not.toContain(control.id);
    expect(controlResult.target).toBe('r1');
  });

  it('forged and altered cookies are refused by signature, counted, and the request still works', async () => {
    const write = await placeOrder(ports.plain1, 'erin');
    const cookie = (write.setCookie ?? '').split(';')[0] ?? '';
    const before = await metrics(ports.plain2);
    // Altered: one character of the signature changed.
    const altered = cookie.slice(0, -1) + (cookie.endsWith('A') ? 'B' : 'A');
    // Forged: a position far ahead, with a signature block from a key the server does not know.
    const forged = `tidemark=${cookie.slice('tidemark='.length).split('~~')[0]}~~k9~${'x'.repeat(43)}`;
    // Tampered position with the original signature.
    const tampered = cookie.replace(/~main~[^~]+/, '~main~1.zzzzzz');
    for (const bad of [altered, forged, tampered]) {
      const response = await fetch(`http://127.0.0.1:${ports.plain2}/my/orders`, {
        headers: { 'x-user': 'erin', cookie: bad },
      });
      expect(response.status).toBe(200);
      const page = (await response.json()) as OrdersPage;
      // Treated as no token: the paused replica answers and the write is not protected.
      expect(page.ids).not.toContain(write.id);
      // The read raised the session (monotonic reads), so a fresh signed token replaces it.
      expect(response.headers.get('set-cookie')).toMatch(/^tidemark=tm1~/);
      expect(response.headers.get('set-cookie')?.split(';')[0]).not.toBe(bad);
      // A response that raised nothing clears the refused cookie so the browser stops sending it.
      const quiet = await fetch(`http://127.0.0.1:${ports.plain2}/whoami-session`, {
        headers: { cookie: bad },
      });
      expect(await quiet.json()).toEqual({ clusters: [] });
      expect(quiet.headers.get('set-cookie')).toMatch(/^tidemark=; Max-Age=0; Path=\/; HttpOnly/);
    }
    const after = await metrics(ports.plain2);
    const signatureFailures =
      (after.badTokens['TIDEMARK_TOKEN_SIGNATURE'] ?? 0) -
      (before.badTokens['TIDEMARK_TOKEN_SIGNATURE'] ?? 0);
    expect(signatureFailures).toBe(6);
  });
});

async function finished(jobId: string | undefined): Promise<OrdersPage> {
  if (!jobId) throw new Error('the app returned no job id');
  const job = await Job.fromId(queue, jobId);
  if (!job) throw new Error(`job ${jobId} not found`);
  return (await job.waitUntilFinished(queueEvents, 30_000)) as OrdersPage;
}

async function waitForReplica(target: Cluster): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const positions = await target.positions();
    const values = Object.values(positions);
    if (values.length === 2 && values[0] === values[1]) return;
    if (Date.now() > deadline)
      throw new Error(`replica did not catch up: ${JSON.stringify(positions)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
