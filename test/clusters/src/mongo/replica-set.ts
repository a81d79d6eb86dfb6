// A MongoDB replica set whose mongod processes we control: the Cluster contract on top of
// replica-set commands. Where the processes run (child processes, containers) is the provider's
// part, given as one MemberProcess per member.
//
// UNTESTED HERE: no mongod on the machines this was written on; the command sequences ran only
// against a scripted stand-in (test/mongo-cluster.test.ts).
//
// MongoDB elects its own primaries, so roles are kept true with priorities: the harness's primary
// has priority 2, other voters 1. A secondary elected while the primary was down (10 s election
// timeout, or a hand-over at its clean shutdown) gives way when start() steps the primary up.

import { MongoServerError } from 'mongodb';
import { pollUntilAccepting } from '../accepting.js';
import { capabilitySet, notSupported, unsupportedBy } from '../capabilities.js';
import type { Cluster, ClusterCapability, ClusterNode, PromoteOptions } from '../types.js';
import { type AdminRunner, type Hello, pauseApplier, resumeApplier, runAdmin } from './admin.js';
import {
  directUrl,
  forcedConfig,
  formatOpTime,
  hasMajority,
  initiateConfig,
  nodeUrl,
  parseCommandText,
  preferConfig,
  type ReplSetConfig,
  splitHost,
  withVoter,
} from './commands.js';

/** One member's server process, wherever it runs. */
export interface MemberProcess {
  /** Start the server; resolves once it was launched (not once it answers). */
  start(): Promise<void>;
  /** SIGKILL the server; resolves once it is gone. */
  kill(): Promise<void>;
  /** Resolves true once the server has exited, false if it still runs after `ms`. */
  exited(ms: number): Promise<boolean>;
  running(): boolean;
  /** Where to look when it misbehaves (a log tail or a path). */
  context(): string;
}

export interface Member {
  readonly node: ClusterNode;
  /** host:port as in the replica-set configuration. */
  readonly configHost: string;
  readonly adminUrl: string;
  readonly proc: MemberProcess;
  paused: boolean;
}

export function makeMember(
  index: number,
  configHost: string,
  setName: string,
  proc: MemberProcess,
): Member {
  const url = nodeUrl(configHost, setName);
  const { host, port } = splitHost(configHost);
  const role = index === 0 ? 'primary' : 'replica';
  const node: ClusterNode = { name: `n${index}`, role, host, port, url, running: proc.running() };
  return { node, configHost, adminUrl: directUrl(url), proc, paused: false };
}

// ShutdownInProgress, InterruptedAtShutdown, InterruptedDueToReplStateChange: on its way down.
const GOING_DOWN = new Set([91, 11600, 11602]);
const START_TIMEOUT_MS = 90_000;
const ROLE_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 60_000;
// The quiesce period of a shutdown (5.0+; before 5.0 how long a primary waits for a secondary).
const SHUTDOWN_TIMEOUT_SECS = 2;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class MongoReplicaSet implements Cluster {
  readonly flavour = 'mongo' as const;
  // mongod processes (local or in containers) we control; nothing beyond the original contract
  // is staged on a real MongoDB yet (no mongod on these machines to prove it against).
  readonly capabilities: ReadonlySet<ClusterCapability> = capabilitySet('pause', 'kill', 'promote');
  readonly cutOff = unsupportedBy('the real-MongoDB cluster', 'cut-off');
  readonly reconnect = unsupportedBy('the real-MongoDB cluster', 'cut-off');
  readonly freeze = unsupportedBy('the real-MongoDB cluster', 'freeze');
  readonly thaw = unsupportedBy('the real-MongoDB cluster', 'freeze');
  readonly rejoin = unsupportedBy('the real-MongoDB cluster', 'rejoin');
  private serverVersion = '';
  private done: Promise<void> | undefined;

  constructor(
    readonly target: string,
    private readonly members: readonly Member[],
    private readonly dispose: () => Promise<void>,
    private readonly run: AdminRunner = runAdmin,
  ) {}

  get version(): string {
    return this.serverVersion;
  }

  /** Initiate the set on n0 once every member answers; resolves when n0 is writable primary. */
  async initiate(setName: string): Promise<void> {
    const first = this.members[0]!;
    await Promise.all(this.members.map((m) => this.answering(m)));
    const hosts = this.members.map((m) => m.configHost);
    await this.run(first.adminUrl, { replSetInitiate: initiateConfig(setName, hosts) });
    await this.becomePrimary(first);
    await Promise.all(
      this.members.slice(1).map((m) => this.until(m, 'SECONDARY', (h) => !!h.secondary)),
    );
    this.serverVersion = String((await this.run(first.adminUrl, { buildInfo: 1 }))['version']);
  }

  private hello(m: Member, timeoutMs = 2_000): Promise<Hello> {
    return this.run(m.adminUrl, { hello: 1 }, timeoutMs) as Promise<Hello>;
  }

  private answering(m: Member): Promise<void> {
    return pollUntilAccepting(m.adminUrl, () => this.hello(m, 1_000), {
      timeoutMs: START_TIMEOUT_MS,
      alive: () => m.proc.running(),
      context: () => `--- ${m.node.name} ---\n${m.proc.context()}`,
    });
  }

  /** Poll every 100 ms until `probe` says done; its errors are retried, the last one reported. */
  private async poll(m: Member, what: string, probe: () => Promise<boolean>): Promise<void> {
    const deadline = Date.now() + ROLE_TIMEOUT_MS;
    let last = 'not done yet';
    for (;;) {
      try {
        if (await probe()) return;
      } catch (err) {
        last = (err as Error).message;
      }
      if (Date.now() > deadline)
        throw new Error(
          `${m.node.name}: ${what} failed within ${ROLE_TIMEOUT_MS} ms (last: ${last})\n${m.proc.context()}`,
        );
      await sleep(100);
    }
  }

  private until(m: Member, what: string, ok: (h: Hello) => boolean): Promise<void> {
    return this.poll(m, `waiting until ${what}`, async () => ok(await this.hello(m)));
  }

  /** Step `m` up until it is writable primary (it may have to catch up first). */
  private becomePrimary(m: Member): Promise<void> {
    let asked = 0;
    return this.poll(m, 'becoming writable primary', async () => {
      if ((await this.hello(m)).isWritablePrimary) return true;
      // replSetStepUp starts an election; asking again before it is decided only adds terms.
      if (Date.now() - asked < 1_000) return false;
      asked = Date.now();
      await this.run(m.adminUrl, { replSetStepUp: 1 }, 15_000);
      return false;
    });
  }

  private async config(m: Member): Promise<ReplSetConfig> {
    return (await this.run(m.adminUrl, { replSetGetConfig: 1 }))['config'] as ReplSetConfig;
  }

  /**
   * Reconfigure through `m`, from its current config on every try: right after an election the
   * previous config or the new term's first write may not be committed yet.
   */
  private reconfig(
    m: Member,
    change: (c: ReplSetConfig) => ReplSetConfig | undefined,
    force: boolean,
  ) {
    return this.poll(m, 'replSetReconfig', async () => {
      const next = change(await this.config(m));
      if (next) await this.run(m.adminUrl, { replSetReconfig: next, force, maxTimeMS: 30_000 });
      return true;
    });
  }

  private member(name: string): Member {
    const m = this.members.find((x) => x.node.name === name);
    if (!m)
      throw new Error(
        `no node '${name}' in this mongo cluster (nodes: ${this.members.map((x) => x.node.name).join(', ')})`,
      );
    return m;
  }

  private primaryMember(): Member {
    return this.members.find((m) => m.node.role === 'primary')!;
  }

  private runningReplica(name: string): Member {
    const m = this.member(name);
    if (m.node.role !== 'replica') throw new Error(`${name} is not a replica`);
    if (!m.proc.running()) throw new Error(`${name} is not running`);
    return m;
  }

  private runningHosts(): string[] {
    return this.members.filter((m) => m.proc.running()).map((m) => m.configHost);
  }

  primary(): ClusterNode {
    return this.nodes().find((n) => n.role === 'primary')!;
  }
  replicas(): ClusterNode[] {
    return this.nodes().filter((n) => n.role === 'replica');
  }
  nodes(): ClusterNode[] {
    for (const m of this.members) m.node.running = m.proc.running();
    return this.members.map((m) => m.node);
  }

  async pauseReplay(name: string): Promise<void> {
    const m = this.runningReplica(name);
    await pauseApplier(this.run, m.adminUrl);
    m.paused = true;
  }

  async resumeReplay(name: string): Promise<void> {
    const m = this.runningReplica(name);
    await resumeApplier(this.run, m.adminUrl);
    m.paused = false;
  }

  /** `shutdown` command (forced on the primary, which would refuse with no caught-up secondary). */
  async stop(name: string): Promise<void> {
    const m = this.member(name);
    if (m.proc.running()) {
      const force = m.node.role === 'primary';
      try {
        await this.run(m.adminUrl, { shutdown: 1, force, timeoutSecs: SHUTDOWN_TIMEOUT_SECS });
      } catch (err) {
        // The server drops the connection as it goes down: only an error reply is a refusal.
        if (err instanceof MongoServerError && !GOING_DOWN.has(Number(err.code)))
          throw new Error(`${name} refused to shut down: ${err.message}`);
      }
      if (!(await m.proc.exited(STOP_TIMEOUT_MS))) await m.proc.kill();
    }
    m.node.running = false;
    m.paused = false;
  }

  async kill(name: string): Promise<void> {
    const m = this.member(name);
    await m.proc.kill();
    m.node.running = false;
    m.paused = false;
  }

  /**
   * Restart with the same data and port; resolves once it is SECONDARY or PRIMARY (after crash
   * recovery, and after a rollback of writes the others never had). A vote that a forced promote
   * took away is given back, and the harness's primary is made writable again when it can be.
   */
  async start(name: string): Promise<void> {
    const m = this.member(name);
    if (m.proc.running()) return;
    await m.proc.start();
    m.node.running = true;
    m.paused = false;
    await this.answering(m);
    await this.until(m, 'SECONDARY or PRIMARY', (h) => !!(h.secondary || h.isWritablePrimary));
    const p = this.primaryMember();
    if (!p.proc.running() || !hasMajority(await this.config(p), this.runningHosts())) return;
    await this.becomePrimary(p);
    if (p !== m) await this.reconfig(p, (c) => withVoter(c, m.configHost), false);
  }

  /**
   * Promote a running replica. The old primary is stopped if running and left stopped. With a
   * majority of voters up the target is stepped up, then given the highest priority; otherwise a
   * forced reconfig on the target takes the votes of the members that are down, so that the
   * target can be elected by the running ones (or alone). The other running replicas follow the
   * new primary by themselves (heartbeats); we wait until they do.
   *
   * When the old primary is started again it finds its oplog diverged from the new primary's:
   * it goes into ROLLBACK, recovers to its last stable timestamp (before the writes it alone
   * had), saves the undone documents under <dbpath>/rollback/, and replicates from the new
   * primary. Writes acknowledged with w:1 only can be lost that way; with w:"majority" they
   * cannot, except after a forced reconfig (the manual warns of that).
   */
  async promote(name: string, options: PromoteOptions = {}): Promise<void> {
    // Members follow the new primary by themselves: a partial re-point cannot be staged.
    if (options.repoint !== undefined)
      notSupported('the real-MongoDB cluster', 'promote-partial', name);
    if (options.keepDiverged) notSupported('the real-MongoDB cluster', 'follow-diverged', name);
    const target = this.runningReplica(name);
    const old = this.primaryMember();
    if (old.proc.running()) await this.stop(old.node.name);
    // A paused target could neither win votes (it is behind) nor finish its drain as primary.
    if (target.paused) {
      await resumeApplier(this.run, target.adminUrl);
      target.paused = false;
    }
    const running = this.runningHosts();
    if (hasMajority(await this.config(target), running)) {
      await this.becomePrimary(target);
      await this.reconfig(target, (c) => preferConfig(c, target.configHost), false);
    } else {
      await this.reconfig(target, (c) => forcedConfig(c, target.configHost, running), true);
      await this.becomePrimary(target);
    }
    target.node.role = 'primary';
    old.node.role = 'replica';
    const others = this.members.filter((m) => m !== target && m.proc.running());
    const follows = (h: Hello) => !!h.secondary && h.primary === target.configHost;
    await Promise.all(others.map((m) => this.until(m, `following ${name}`, follows)));
  }

  /** Per running member: hello's lastWrite (the primary's last write, a secondary's last applied). */
  async positions(): Promise<Record<string, string>> {
    const running = this.members.filter((m) => m.proc.running());
    const texts = await Promise.all(
      running.map(async (m) => formatOpTime((await this.hello(m)).lastWrite?.opTime)),
    );
    return Object.fromEntries(running.map((m, i) => [m.node.name, texts[i]!]));
  }

  /** Run a command (JSON text, Extended JSON relaxed) on the member's `admin` database. */
  async exec(name: string, text: string): Promise<unknown[]> {
    return [await this.run(this.member(name).adminUrl, parseCommandText(text))];
  }

  teardown(): Promise<void> {
    this.done ??= (async () => {
      await this.dispose();
      for (const m of this.members) m.node.running = false;
    })();
    return this.done;
  }
}
