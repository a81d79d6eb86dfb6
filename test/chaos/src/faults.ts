// The seeded fault scheduler. It picks faults by what the cluster can stage (capabilities) and
// by the cluster's current state, injects them while the sessions run, heals them after a
// random hold, and does what an operator does after a failover: reconfigure the app, rebuild
// nodes left on an old history.
import type { Cluster, ClusterCapability } from '@tidemark/test-clusters';
import type { App } from './app.js';
import type { Failover } from './history.js';
import type { Prng } from './prng.js';
import { absentIds, presentIds } from './verify.js';

/** What this cluster can stage (the harness says; a fault needs all of its capabilities). */
export function capabilitiesOf(cluster: Cluster): Set<ClusterCapability> {
  return new Set(cluster.capabilities);
}

export type FaultKind =
  | 'pause-replay'
  | 'kill-replica'
  | 'cut-off'
  | 'freeze-primary'
  | 'crash-promote'
  | 'switchover'
  | 'rejoin'
  | 'restart-node';

export const FAULT_KINDS: readonly FaultKind[] = [
  'pause-replay',
  'kill-replica',
  'cut-off',
  'freeze-primary',
  'crash-promote',
  'switchover',
  'rejoin',
  'restart-node',
];

/** What each fault needs from the cluster. */
const NEEDS: Record<FaultKind, readonly ClusterCapability[]> = {
  'pause-replay': ['pause'],
  'kill-replica': ['kill'],
  'cut-off': ['cut-off'],
  'freeze-primary': ['freeze'],
  'crash-promote': ['kill', 'promote'],
  switchover: ['promote'],
  rejoin: ['rejoin'],
  'restart-node': ['kill'],
};

/** How often each fault is picked among those that can run now. */
const WEIGHTS: Record<FaultKind, number> = {
  'pause-replay': 3,
  'kill-replica': 2,
  'cut-off': 2,
  'freeze-primary': 1.5,
  'crash-promote': 2.5,
  switchover: 0.7,
  rejoin: 3,
  'restart-node': 2,
};

export interface FaultCounts {
  injected: number;
  failed: number;
  healed: number;
  healFailed: number;
}

/** A fault in force, healed at `until`. */
interface Incident {
  readonly kind: FaultKind;
  readonly node: string;
  readonly until: number;
  heal(): Promise<void>;
  /** Healed (or being healed): taken off the list once, by whoever comes first. */
  taken: boolean;
  /** Heals on its own timer (a thaw must not wait for a slow fault elsewhere). */
  timer?: NodeJS.Timeout;
}

export interface SchedulerOptions {
  readonly cluster: Cluster;
  readonly app: App;
  readonly prng: Prng;
  /** ms since the campaign start. */
  readonly now: () => number;
  readonly log: (line: string) => void;
  /** Ids of every write that has finished so far (acknowledged or not). */
  readonly finishedWrites: () => number[];
  readonly onFailover: (failover: Failover) => void;
  /** Limit the kinds (default: every kind the cluster can stage). */
  readonly kinds?: ReadonlySet<FaultKind> | undefined;
  readonly signal: AbortSignal;
}

/** At most this many holding faults (pause, kill, cut-off, freeze) at once. */
const MAX_INCIDENTS = 2;

export class FaultScheduler {
  readonly counts: Record<FaultKind, FaultCounts> = Object.fromEntries(
    FAULT_KINDS.map((kind) => [kind, { injected: 0, failed: 0, healed: 0, healFailed: 0 }]),
  ) as Record<FaultKind, FaultCounts>;
  /** Free-form tallies: promotion variants, lost writes per failover. */
  readonly notes: Record<string, number> = {};
  readonly capabilities: Set<ClusterCapability>;
  private readonly cluster: Cluster;
  private incidents: Incident[] = [];
  private readonly timedHeals = new Set<Promise<void>>();
  /** Nodes that may hold another history, with why and since when. */
  private readonly suspects = new Map<string, { why: string; since: number }>();
  /** Ids absent from the primary after some failover. */
  private readonly lost = new Set<number>();
  private failovers = 0;

  constructor(private readonly options: SchedulerOptions) {
    this.cluster = options.cluster;
    this.capabilities = capabilitiesOf(options.cluster);
  }

  get totalInjected(): number {
    return Object.values(this.counts).reduce((sum, c) => sum + c.injected, 0);
  }

  /** Inject faults until `stopAt` (ms since the start) or the signal, then heal what holds. */
  async run(stopAt: number): Promise<void> {
    const { prng, now, signal } = this.options;
    while (now() < stopAt && !signal.aborted) {
      await sleep(prng.between(800, 3000), signal);
      if (now() >= stopAt || signal.aborted) break;
      await this.healDue();
      await this.injectOne(stopAt);
      await this.sync();
    }
    await this.healAll();
    await this.sync();
  }

  /** Heal every holding fault now (the end of the campaign). */
  async healAll(): Promise<void> {
    for (const incident of [...this.incidents]) await this.take(incident);
    await Promise.all(this.timedHeals);
  }

  private async healDue(): Promise<void> {
    const now = this.options.now();
    for (const incident of this.incidents.filter((i) => i.until <= now)) await this.take(incident);
  }

  private async healOn(node: string): Promise<void> {
    for (const incident of this.incidents.filter((i) => i.node === node)) await this.take(incident);
  }

  private async take(incident: Incident): Promise<void> {
    if (incident.taken) return;
    incident.taken = true;
    clearTimeout(incident.timer);
    this.incidents = this.incidents.filter((i) => i !== incident);
    await this.healIncident(incident);
  }

  private async healIncident(incident: Incident): Promise<void> {
    try {
      await incident.heal();
      this.counts[incident.kind].healed++;
      this.log(`heal ${incident.kind} ${incident.node}`);
    } catch (error) {
      this.counts[incident.kind].healFailed++;
      this.log(`heal ${incident.kind} ${incident.node} failed: ${short(error)}`);
      // A replica that cannot follow the primary again (its history diverged while it was cut
      // off or down) runs on as it is: suspect until rebuilt, never promoted.
      if (incident.kind !== 'freeze-primary' && this.nodeRunning(incident.node)) {
        this.suspect(incident.node, `could not follow the primary again: ${short(error, 120)}`);
      }
    }
  }

  private async sync(): Promise<void> {
    try {
      if (await this.options.app.syncTopology()) {
        const configured = this.options.app.configured;
        this.log(
          `app reconfigured (generation ${this.options.app.generation}): primary ${configured?.primary}, replicas [${configured?.replicas.join(', ')}]`,
        );
      }
    } catch (error) {
      this.log(`app reconfiguration failed: ${short(error)}`);
    }
  }

  private busy(node: string): boolean {
    return this.incidents.some((i) => i.node === node);
  }

  private can(kind: FaultKind): boolean {
    if (this.options.kinds && !this.options.kinds.has(kind)) return false;
    return NEEDS[kind].every((capability) => this.capabilities.has(capability));
  }

  /** Running replicas on the primary's history that nothing else is happening to. */
  private healthyReplicas(): string[] {
    return this.cluster
      .replicas()
      .filter((n) => n.running && !this.suspects.has(n.name) && !this.busy(n.name))
      .map((n) => n.name);
  }

  private eligible(stopAt: number): Array<readonly [FaultKind, number]> {
    const now = this.options.now();
    const primary = this.cluster.primary();
    const replicas = this.cluster.replicas();
    const idle = replicas.filter((n) => n.running && !this.busy(n.name));
    const healthy = this.healthyReplicas();
    const holding = this.incidents.length < MAX_INCIDENTS;
    // A failover needs time to settle and be seen before the campaign ends.
    const failoverRoom = stopAt - now > 8000 && primary.running && healthy.length > 0;
    const candidates: Array<readonly [FaultKind, boolean]> = [
      ['pause-replay', holding && idle.length > 0],
      ['kill-replica', holding && idle.length > 0],
      ['cut-off', holding && idle.length > 0],
      ['freeze-primary', holding && primary.running && !this.busy(primary.name)],
      ['crash-promote', failoverRoom && !this.busy(primary.name)],
      ['switchover', failoverRoom && !this.busy(primary.name)],
      ['rejoin', this.rejoinable(now).length > 0],
      ['restart-node', this.restartable().length > 0],
    ];
    return candidates
      .filter(([kind, ok]) => ok && this.can(kind))
      .map(([kind]) => [kind, WEIGHTS[kind]] as const);
  }

  /** Suspect nodes left as they are for a while (so the app meets them), then rebuilt. */
  private rejoinable(now: number): string[] {
    return [...this.suspects]
      .filter(([name, s]) => now - s.since >= 2000 && !this.busy(name))
      .map(([name]) => name);
  }

  /**
   * Stopped nodes nothing will bring back otherwise: an old primary after a switchover, and,
   * where the cluster cannot rebuild nodes, a crashed old primary (restarted as is, so it stays
   * on its old history).
   */
  private restartable(): string[] {
    return this.cluster
      .nodes()
      .filter(
        (n) =>
          !n.running &&
          n.role === 'replica' &&
          !this.busy(n.name) &&
          !(this.suspects.has(n.name) && this.capabilities.has('rejoin')),
      )
      .map((n) => n.name);
  }

  private async injectOne(stopAt: number): Promise<void> {
    const options = this.eligible(stopAt);
    if (options.length === 0) return;
    const kind = this.options.prng.weighted(options);
    try {
      await this.inject(kind);
      this.counts[kind].injected++;
    } catch (error) {
      this.counts[kind].failed++;
      this.log(`${kind} failed: ${short(error)}`);
    }
  }

  private async inject(kind: FaultKind): Promise<void> {
    const { prng } = this.options;
    const cluster = this.cluster;
    const now = this.options.now();
    const idle = () =>
      cluster
        .replicas()
        .filter((n) => n.running && !this.busy(n.name))
        .map((n) => n.name);
    switch (kind) {
      case 'pause-replay': {
        const node = prng.pick(idle());
        const hold = prng.between(500, 5000);
        await cluster.pauseReplay(node);
        this.hold(kind, node, now + hold, () => cluster.resumeReplay(node));
        this.log(`pause-replay ${node} for ${seconds(hold)}`);
        return;
      }
      case 'kill-replica': {
        const node = prng.pick(idle());
        const hold = prng.between(1000, 6000);
        await cluster.kill(node);
        this.hold(kind, node, now + hold, () => this.startNode(node));
        this.log(`kill-replica ${node} for ${seconds(hold)}`);
        return;
      }
      case 'cut-off': {
        const node = prng.pick(idle());
        const hold = prng.between(1000, 10_000);
        await cluster.cutOff(node);
        this.hold(kind, node, now + hold, () => cluster.reconnect(node));
        this.log(`cut-off ${node} for ${seconds(hold)}`);
        return;
      }
      case 'freeze-primary': {
        const node = cluster.primary().name;
        const hold = prng.between(300, 3000);
        await cluster.freeze(node);
        this.hold(kind, node, now + hold, () => cluster.thaw(node));
        this.log(`freeze-primary ${node} for ${seconds(hold)}`);
        return;
      }
      case 'crash-promote':
        return this.crashPromote();
      case 'switchover':
        return this.switchover();
      case 'rejoin': {
        const node = prng.pick(this.rejoinable(now));
        await this.healOn(node);
        this.log(`rejoin ${node} (${this.suspects.get(node)?.why ?? 'suspect'})`);
        await cluster.rejoin(node);
        this.suspects.delete(node);
        await this.checkNode(node);
        if (!this.suspects.has(node)) this.log(`rejoin ${node}: follows the primary`);
        return;
      }
      case 'restart-node': {
        const node = prng.pick(this.restartable());
        this.log(`restart-node ${node}${this.suspects.has(node) ? ' (not rebuilt)' : ''}`);
        await this.startNode(node);
        return;
      }
    }
  }

  private hold(kind: FaultKind, node: string, until: number, heal: () => Promise<void>): void {
    const incident: Incident = { kind, node, until, heal, taken: false };
    this.incidents.push(incident);
    if (kind === 'freeze-primary') {
      // A frozen primary must thaw on time even while the scheduler waits on something that
      // needs the primary (a replica restarting and catching up, say).
      incident.timer = setTimeout(
        () => {
          const healing = this.take(incident);
          this.timedHeals.add(healing);
          void healing.finally(() => this.timedHeals.delete(healing));
        },
        Math.max(0, until - this.options.now()),
      );
    }
  }

  /**
   * Start a node; when it comes up but cannot follow the primary (its history diverged), it
   * runs on as it is, and is suspect until rebuilt.
   */
  private async startNode(node: string): Promise<void> {
    try {
      await this.cluster.start(node);
    } catch (error) {
      if (!this.nodeRunning(node)) throw error;
      this.suspect(node, `runs but does not follow: ${short(error)}`);
    }
    await this.checkNode(node);
  }

  private nodeRunning(node: string): boolean {
    return this.cluster.nodes().some((n) => n.name === node && n.running);
  }

  /**
   * Whether a running node holds rows lost in a failover (direct query): one that does is on
   * another history and suspect until rebuilt. A query never clears a suspicion (a crashed old
   * primary may have diverged without holding any row the checker knows).
   */
  private async checkNode(node: string): Promise<void> {
    if (!this.nodeRunning(node) || this.lost.size === 0) return;
    try {
      const present = await presentIds(this.cluster, node, [...this.lost]);
      if (present.size > 0) this.suspect(node, `holds ${present.size} lost row(s)`);
    } catch {
      // Not answering: nothing learned.
    }
  }

  private suspect(node: string, why: string): void {
    if (!this.suspects.has(node)) this.suspects.set(node, { why, since: this.options.now() });
  }

  private async crashPromote(): Promise<void> {
    const { prng, now } = this.options;
    const cluster = this.cluster;
    const oldPrimary = cluster.primary().name;
    const healthy = this.healthyReplicas();
    const canStage = this.capabilities.has('kill') || this.capabilities.has('cut-off');
    const variant = prng.weighted<'freshest' | 'lagged' | 'staged-lag'>([
      ['freshest', 1],
      ['lagged', 1],
      ['staged-lag', canStage ? 3 : 0],
    ]);
    const others = cluster.replicas().filter((n) => n.running);
    const partial =
      this.capabilities.has('promote-partial') && others.length > 1 && prng.chance(0.5);
    // Where the database lets them (MySQL), replicas holding the crash's lost writes are
    // sometimes re-pointed all the same, as an operator who checks nothing would: they follow
    // the new primary and keep those writes (errant transactions) until rebuilt.
    const keepDiverged = !partial && this.capabilities.has('follow-diverged') && prng.chance(0.5);
    await this.healOn(oldPrimary);

    let chosen: string;
    let staged: 'cut-off' | 'stopped' | undefined;
    if (variant === 'staged-lag') {
      chosen = prng.pick(healthy);
      await this.healOn(chosen);
      const hold = prng.between(500, 2500);
      if (
        this.capabilities.has('cut-off') &&
        (!this.capabilities.has('kill') || prng.chance(0.5))
      ) {
        await cluster.cutOff(chosen);
        staged = 'cut-off';
      } else {
        await cluster.stop(chosen);
        staged = 'stopped';
      }
      this.log(`crash-promote: ${chosen} ${staged} for ${seconds(hold)} while writes go on`);
      await sleep(hold, this.options.signal);
    } else {
      const order = await this.options.app.replicasByProgress(healthy);
      const ranked = order.length > 0 ? order : healthy;
      chosen = variant === 'freshest' ? ranked[0]! : ranked[ranked.length - 1]!;
      await this.healOn(chosen);
    }

    const crashAt = now();
    await cluster.kill(oldPrimary);
    this.suspect(oldPrimary, 'crashed old primary');
    const delay = prng.between(200, 1500);
    this.log(
      `crash-promote: killed primary ${oldPrimary}; promoting ${chosen} (${variant}${partial ? ', others left on the old history' : ''}${keepDiverged ? ', others re-pointed even if they hold lost writes' : ''}) in ${seconds(delay)}`,
    );
    await sleep(delay, this.options.signal);
    if (staged === 'stopped') await this.startQuietly(chosen);
    if (staged === 'cut-off') await cluster.reconnect(chosen).catch(() => undefined);

    let promoteError: unknown;
    try {
      if (partial) await cluster.promote(chosen, { repoint: [] });
      else if (keepDiverged) await cluster.promote(chosen, { keepDiverged: true });
      else await cluster.promote(chosen);
    } catch (error) {
      promoteError = error;
    }
    if (cluster.primary().name !== chosen) {
      // The promotion did not happen: bring the old primary back, as an operator would.
      this.suspects.delete(oldPrimary);
      await cluster.start(oldPrimary).catch(() => undefined);
      throw new Error(`promotion of ${chosen} failed: ${short(promoteError)}`);
    }
    this.note(
      `crash-promote:${variant}${partial ? '+partial' : ''}${keepDiverged ? '+keep-diverged' : ''}`,
    );
    for (const node of cluster.replicas()) {
      if (node.name === oldPrimary || !node.running) continue;
      if (partial) this.suspect(node.name, 'left on the old history (not re-pointed)');
      else if (promoteError !== undefined && short(promoteError, 4000).includes(node.name)) {
        this.suspect(node.name, 'did not follow the new primary');
      }
    }
    if (promoteError !== undefined) this.log(`crash-promote: ${short(promoteError)}`);
    await this.afterPromotion('crash-promote', oldPrimary, chosen, crashAt);
    // Sometimes the new primary is slow right when sessions come back with their old tokens:
    // the history check cannot answer in time.
    if (this.capabilities.has('freeze') && this.can('freeze-primary') && prng.chance(0.3)) {
      const hold = prng.between(500, 2500);
      await cluster.freeze(chosen);
      this.counts['freeze-primary'].injected++;
      this.hold('freeze-primary', chosen, now() + hold, () => cluster.thaw(chosen));
      this.note('crash-promote:+slow-new-primary');
      this.log(`freeze-primary ${chosen} (the new primary) for ${seconds(hold)}`);
    }
  }

  private async switchover(): Promise<void> {
    const { prng, now } = this.options;
    const cluster = this.cluster;
    const oldPrimary = cluster.primary().name;
    const chosen = prng.pick(this.healthyReplicas());
    await this.healOn(oldPrimary);
    await this.healOn(chosen);
    this.log(`switchover: ${oldPrimary} stops cleanly, ${chosen} becomes primary`);
    const crashAt = now();
    let promoteError: unknown;
    try {
      await cluster.promote(chosen);
    } catch (error) {
      promoteError = error;
    }
    if (cluster.primary().name !== chosen) {
      await cluster.start(oldPrimary).catch(() => undefined);
      throw new Error(`switchover to ${chosen} failed: ${short(promoteError)}`);
    }
    if (promoteError !== undefined) {
      this.log(`switchover: ${short(promoteError)}`);
      for (const node of cluster.replicas()) {
        if (node.running && short(promoteError, 4000).includes(node.name)) {
          this.suspect(node.name, 'did not follow the new primary');
        }
      }
    }
    await this.afterPromotion('switchover', oldPrimary, chosen, crashAt);
  }

  private async startQuietly(node: string): Promise<void> {
    try {
      await this.cluster.start(node);
    } catch (error) {
      if (!this.nodeRunning(node)) throw error;
    }
  }

  /**
   * After a promotion: establish which finished writes the new primary lacks (direct query),
   * mark nodes that still hold them, reconfigure the app, record the failover.
   */
  private async afterPromotion(
    kind: 'crash-promote' | 'switchover',
    oldPrimary: string,
    promoted: string,
    crashAt: number,
  ): Promise<void> {
    const absent = await absentIds(this.cluster, promoted, this.options.finishedWrites());
    for (const id of absent) this.lost.add(id);
    for (const node of this.cluster.nodes()) {
      if (node.name !== promoted && node.running) await this.checkNode(node.name);
    }
    await this.options.app.reconfigure();
    const readyAt = this.options.now();
    const index = ++this.failovers;
    this.options.onFailover({
      index,
      kind,
      oldPrimary,
      promoted,
      crashAt,
      readyAt,
      absent,
    });
    const suspects = [...this.suspects].map(([n, s]) => `${n}: ${s.why}`).join('; ');
    this.log(
      `failover #${index} (${kind}) ${oldPrimary} -> ${promoted}: ${absent.length} finished write(s) absent from the new primary; app generation ${this.options.app.generation}, replicas [${this.options.app.configured?.replicas.join(', ')}]${suspects ? `; suspect: ${suspects}` : ''}`,
    );
  }

  private note(key: string): void {
    this.notes[key] = (this.notes[key] ?? 0) + 1;
  }

  private log(line: string): void {
    this.options.log(line);
  }
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)}s`;
}

export function short(error: unknown, max = 300): string {
  const text = error instanceof Error ? error.message : String(error);
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > max ? `${line.slice(0, max)}...` : line;
}

/** Sleep that ends early when the signal aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
