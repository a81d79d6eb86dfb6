// The 'local' provider: servers as child processes of the test process, from binaries on this
// machine (Debian packages, an npm package, or a chroot built once into the cache directory).
// Target `mongo-sim` is the in-process MongoDB replica-set SIMULATOR (no server binary at all).

import { localMongo } from '../../mongo/index.js';
import { MongoSimCluster } from '../../mongo-sim/cluster.js';
import type { TargetName } from '../../targets.js';
import {
  type Availability,
  type Cluster,
  type ClusterProvider,
  DEFAULT_REPLICAS,
  type StartOptions,
} from '../../types.js';
import { LocalMysqlCluster } from './mysql.js';
import { MYSQL_DISTRIBUTIONS } from './mysql-targets.js';
import { PG_DISTRIBUTIONS } from './pg-targets.js';
import { LocalPgCluster } from './postgres.js';

const MONGO_SIM = 'mongo-sim' satisfies TargetName;
/** A real replica set: three mongod processes from the binary named in TIDEMARK_MONGOD. */
const MONGO = 'mongo' satisfies TargetName;

export class LocalProvider implements ClusterProvider {
  readonly name = 'local' as const;

  targets(): string[] {
    return [
      ...Object.keys(PG_DISTRIBUTIONS),
      ...Object.keys(MYSQL_DISTRIBUTIONS),
      MONGO_SIM,
      MONGO,
    ];
  }

  supports(target: string): boolean {
    return (
      Object.hasOwn(PG_DISTRIBUTIONS, target) ||
      Object.hasOwn(MYSQL_DISTRIBUTIONS, target) ||
      target === MONGO_SIM ||
      target === MONGO
    );
  }

  async available(target: string): Promise<Availability> {
    if (target === MONGO_SIM) return { ok: true };
    if (target === MONGO) return localMongo.available();
    const dist = PG_DISTRIBUTIONS[target] ?? MYSQL_DISTRIBUTIONS[target];
    if (!dist)
      return {
        ok: false,
        reason: `unknown target '${target}' (local targets: ${this.targets().join(', ')})`,
      };
    const reason = await dist.unavailableReason();
    return reason ? { ok: false, reason } : { ok: true };
  }

  async start(target: string, options: StartOptions = {}): Promise<Cluster> {
    if (target === MONGO_SIM) return MongoSimCluster.start(options.replicas ?? DEFAULT_REPLICAS);
    if (target === MONGO) return localMongo.start(options);
    const mysqlDist = MYSQL_DISTRIBUTIONS[target];
    if (mysqlDist) {
      return LocalMysqlCluster.start(
        await mysqlDist.prepare(),
        options.replicas ?? DEFAULT_REPLICAS,
      );
    }
    const dist = PG_DISTRIBUTIONS[target];
    if (!dist) throw new Error(`the local provider does not support target '${target}'`);
    const bins = await dist.prepare((runtime) => runtime.ensureUser('postgres'));
    return LocalPgCluster.start(target, bins, options.replicas ?? DEFAULT_REPLICAS);
  }
}

export const localProvider = new LocalProvider();
