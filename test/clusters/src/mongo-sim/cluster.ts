// The conformance suite's view of the MongoDB replica-set SIMULATOR: the same Cluster contract the
// real clusters implement, so target `mongo-sim` runs every scenario unchanged. A simulator: it
// proves what a client library sends and decides, not how mongod behaves.

import { capabilitySet, notSupported } from '../capabilities.js';
import {
  type Cluster,
  type ClusterCapability,
  type ClusterNode,
  type PromoteOptions,
  STAGING_CAPABILITIES,
} from '../types.js';
import type { SimulatorBson } from './bson.js';
import { MongoReplicaSetSimulator } from './replica-set-simulator.js';

const SET_NAME = 'tidemark-sim';

/** Node names as every cluster uses them: n0 starts as the primary. */
function nodeNames(replicas: number): string[] {
  return Array.from({ length: replicas + 1 }, (_, n) => `n${n}`);
}

export class MongoSimCluster implements Cluster {
  readonly target = 'mongo-sim';
  readonly flavour = 'mongo-sim' as const;
  readonly version = '7.0.0-simulator';
  readonly capabilities: ReadonlySet<ClusterCapability> = capabilitySet(...STAGING_CAPABILITIES);

  private constructor(private readonly simulator: MongoReplicaSetSimulator) {}

  /** Start a simulated primary and `replicas` secondaries on free 127.0.0.1 ports. */
  static async start(replicas: number): Promise<MongoSimCluster> {
    // The driver's own BSON, so the simulator's bytes are encoded by the library under test.
    const { BSON } = await import('mongodb');
    const simulator = await MongoReplicaSetSimulator.start({
      bson: BSON as unknown as SimulatorBson,
      setName: SET_NAME,
      memberNames: nodeNames(replicas),
    });
    return new MongoSimCluster(simulator);
  }

  /** The simulator itself, for tests that inspect the commands it received. */
  get raw(): MongoReplicaSetSimulator {
    return this.simulator;
  }

  nodes(): ClusterNode[] {
    return this.simulator.members.map((member) => {
      const [host = '127.0.0.1', port = '0'] = member.host.split(':');
      return {
        name: member.name,
        role: member.role === 'primary' ? 'primary' : 'replica',
        host,
        port: Number(port),
        url: `mongodb://${member.host}/?replicaSet=${SET_NAME}`,
        running: !member.down,
      };
    });
  }

  primary(): ClusterNode {
    return this.nodes().find((node) => node.role === 'primary')!;
  }

  replicas(): ClusterNode[] {
    return this.nodes().filter((node) => node.role === 'replica');
  }

  async pauseReplay(name: string): Promise<void> {
    this.simulator.pause(name);
  }

  async resumeReplay(name: string): Promise<void> {
    this.simulator.resume(name);
  }

  async stop(name: string): Promise<void> {
    await this.simulator.kill(name);
  }

  async kill(name: string): Promise<void> {
    await this.simulator.kill(name);
  }

  async start(name: string): Promise<void> {
    await this.simulator.restart(name);
  }

  async promote(name: string, options: PromoteOptions = {}): Promise<void> {
    if (options.keepDiverged)
      notSupported(
        'the MongoDB simulator',
        'follow-diverged',
        name,
        'a member that syncs from the new primary rolls back what it lacks',
      );
    await this.simulator.promote(name, options);
  }

  async cutOff(name: string): Promise<void> {
    this.simulator.cutOff(name);
  }

  async reconnect(name: string): Promise<void> {
    this.simulator.reconnect(name);
  }

  async freeze(name: string): Promise<void> {
    this.simulator.freeze(name);
  }

  async thaw(name: string): Promise<void> {
    this.simulator.thaw(name);
  }

  async rejoin(name: string): Promise<void> {
    await this.simulator.rejoin(name);
  }

  async positions(): Promise<Record<string, string>> {
    const positions: Record<string, string> = {};
    for (const member of this.simulator.members) {
      if (member.down) continue;
      positions[member.name] =
        `${member.lastApplied.t}:${member.lastApplied.i}/${member.lastAppliedTerm}`;
    }
    return positions;
  }

  async exec(name: string, _text: string): Promise<unknown[]> {
    throw new Error(
      `exec('${name}') is not supported by the mongo-sim cluster: it runs no SQL; use the mongodb driver against ${this.simulator.uri}`,
    );
  }

  async teardown(): Promise<void> {
    await this.simulator.stop();
  }
}
