// The testcontainers provider's MongoDB cluster: one `mongo:8.0` container per member
// (TIDEMARK_TC_IMAGE_MONGO overrides), each running mongod with the local flags. UNTESTED HERE:
// no mongod and no container engine on the machines this was written on; only the fast failure
// of available() ran.
//
// Host networking, not a private network: the driver connects to the members at the host:port of
// the replica-set config, and only 127.0.0.1:<port> works for the members and the tests alike (a
// network alias does not resolve outside). So the engine must run on this machine.
// As in testcontainers.ts, PID 1 is a shell loop that outlives mongod (and reaps it after a kill),
// so stop/kill/start act on the mongod inside; `mongod --fork` returns once it accepts connections.

import { freePorts } from '../ports.js';
import type { Availability, Cluster, StartOptions } from '../types.js';
import { DEFAULT_IMAGE, IMAGE_ENV, mongodArgs } from './commands.js';
import { memberCount, uniqueSetName } from './local.js';
import { type MemberProcess, MongoReplicaSet, makeMember } from './replica-set.js';

type TC = typeof import('testcontainers');
type StartedContainer = Awaited<ReturnType<InstanceType<TC['GenericContainer']>['start']>>;

const HOST = '127.0.0.1';
const READY = 'TIDEMARK-READY';
const DATA_DIR = '/data/tidemark';
const PID_FILE = '/tmp/mongod.pid';
const LOG_FILE = '/tmp/mongod.log';
const LOCAL_ENGINES = new Set(['localhost', '127.0.0.1', '::1']);

export function imageFromEnv(env: NodeJS.ProcessEnv): string {
  return env[IMAGE_ENV]?.trim() || DEFAULT_IMAGE;
}

/** Shell scripts run inside a member's container (bash, coreutils: the mongo images have both). */
export function containerScripts(args: readonly string[]) {
  const start = `mongod ${args.join(' ')} --fork --logpath ${LOG_FILE} --logappend --pidfilepath ${PID_FILE}`;
  // Gone, or a zombie the shell loop has not reaped yet.
  const gone = `p=$(cat ${PID_FILE} 2>/dev/null) || exit 0; [ ! -e /proc/$p ] || [ "$(cut -d' ' -f3 /proc/$p/stat)" = Z ]`;
  const waitGone = (ms: number) =>
    `for i in $(seq ${Math.ceil(ms / 100)}); do ( ${gone} ) && exit 0; sleep 0.1; done; exit 1`;
  return {
    boot: `set -e\nmkdir -p ${DATA_DIR}\n${start}\necho ${READY}\nwhile :; do sleep 1; done`,
    start,
    kill: `kill -9 "$(cat ${PID_FILE})" 2>/dev/null || true\n${waitGone(10_000)}`,
    waitGone,
  };
}

function containerProcess(container: StartedContainer, args: readonly string[]): MemberProcess {
  const scripts = containerScripts(args);
  let running = true;
  const sh = async (script: string) => (await container.exec(['bash', '-c', script])).exitCode;
  return {
    async start() {
      const code = await sh(scripts.start);
      if (code !== 0)
        throw new Error(`mongod did not start in container ${container.getId()} (see ${LOG_FILE})`);
      running = true;
    },
    async kill() {
      if ((await sh(scripts.kill)) !== 0) throw new Error('mongod survived SIGKILL');
      running = false;
    },
    async exited(ms) {
      const gone = (await sh(scripts.waitGone(ms))) === 0;
      if (gone) running = false;
      return gone;
    },
    running: () => running,
    context: () => `container ${container.getId().slice(0, 12)}, log ${LOG_FILE}`,
  };
}

export const containerMongo = {
  async available(): Promise<Availability> {
    try {
      const tc = await import('testcontainers');
      // Rejects within milliseconds when there is no engine.
      const client = await tc.getContainerRuntimeClient();
      const host = client.info.containerRuntime.host;
      if (!LOCAL_ENGINES.has(host))
        return {
          ok: false,
          reason: `the container engine runs on ${host}, not on this machine: the mongo containers need host networking (members must be reachable at the same 127.0.0.1:<port> from the tests and from each other)`,
        };
    } catch (err) {
      return { ok: false, reason: `no container runtime: ${(err as Error).message}` };
    }
    return { ok: true };
  },

  async start(options: StartOptions = {}): Promise<Cluster> {
    const { GenericContainer, Wait } = await import('testcontainers');
    const setName = uniqueSetName();
    const ports = await freePorts(memberCount(options), HOST);
    const started: StartedContainer[] = [];
    const dispose = async () => {
      await Promise.allSettled(started.map((c) => c.stop({ timeout: 0 })));
    };
    const argsOf = (port: number) => mongodArgs({ setName, port, dbPath: DATA_DIR });
    try {
      // All settle before we go on, so a failure cannot leave a container starting unseen.
      const results = await Promise.allSettled(
        ports.map((port) =>
          new GenericContainer(imageFromEnv(process.env))
            .withNetworkMode('host')
            .withEntrypoint(['bash', '-c'])
            .withCommand([containerScripts(argsOf(port)).boot])
            .withWaitStrategy(Wait.forLogMessage(READY))
            .withStartupTimeout(180_000)
            .start(),
        ),
      );
      for (const r of results) if (r.status === 'fulfilled') started.push(r.value);
      const failed = results.find((r) => r.status === 'rejected');
      if (failed) throw (failed as PromiseRejectedResult).reason;
      const members = started.map((c, i) =>
        makeMember(i, `${HOST}:${ports[i]}`, setName, containerProcess(c, argsOf(ports[i]!))),
      );
      const cluster = new MongoReplicaSet('mongo', members, dispose);
      await cluster.initiate(setName);
      return cluster;
    } catch (err) {
      await dispose();
      throw err;
    }
  },
};
