// The nodes of a cluster whose servers the harness runs itself: lookups by name and role, and
// the per-node bookkeeping every such cluster keeps the same way. Used by the PostgreSQL and the
// MySQL/MariaDB topologies.

import type { ClusterNode } from './types.js';

export class NodeTable<M extends { readonly node: ClusterNode }> {
  private readonly members: M[] = [];

  /** `cluster` names the cluster in errors, e.g. its target. */
  constructor(
    private readonly cluster: string,
    members: readonly M[] = [],
  ) {
    this.members.push(...members);
  }

  add(member: M): void {
    this.members.push(member);
  }

  /** Every member, in node order (n0 first). */
  all(): readonly M[] {
    return this.members;
  }

  get(name: string): M {
    const m = this.members.find((x) => x.node.name === name);
    if (!m)
      throw new Error(
        `no node '${name}' in this ${this.cluster} cluster (nodes: ${this.members.map((x) => x.node.name).join(', ')})`,
      );
    return m;
  }

  /** The member whose node is the primary now. */
  primary(): M {
    const m = this.members.find((x) => x.node.role === 'primary');
    if (!m) throw new Error('cluster has no primary');
    return m;
  }

  /** A replica that runs, or an error saying which of the two it is not. */
  runningReplica(name: string): M {
    const m = this.get(name);
    if (m.node.role !== 'replica') throw new Error(`${name} is not a replica`);
    if (!m.node.running) throw new Error(`${name} is not running`);
    return m;
  }

  nodes(): ClusterNode[] {
    return this.members.map((m) => m.node);
  }

  replicaNodes(): ClusterNode[] {
    return this.nodes().filter((n) => n.role === 'replica');
  }

  /** `read(member)` of every running member, by node name (Cluster.positions()). */
  async positions(read: (member: M) => Promise<string>): Promise<Record<string, string>> {
    const running = this.members.filter((m) => m.node.running);
    const texts = await Promise.all(running.map(read));
    return Object.fromEntries(running.map((m, i) => [m.node.name, texts[i]!]));
  }

  /** Mark every node stopped (after teardown). */
  allStopped(): void {
    for (const m of this.members) m.node.running = false;
  }
}
