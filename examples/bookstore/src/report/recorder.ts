import { type ReplicaState, type Router, routeOutcome } from '@tidemark/core';
import { stalenessSeconds } from '@tidemark/core/adapter';
import type { ScenarioName, StrategyName } from '../options.js';
import type { RunResult } from '../result.js';
import type {
  ReadOutcome,
  ReportData,
  ReportMeta,
  ReportRead,
  ReportReplicaState,
  ReportRun,
} from './model.js';
import type { TracedRead, WorkloadTrace } from './trace.js';

/**
 * Collects what the HTML report draws while the demo runs: every read's latency and route
 * outcome, and the replica state the router's monitor reported. One {@link RunRecorder} per
 * (scenario, strategy) run.
 */
export class ReportRecorder {
  private readonly runs: ReportRun[] = [];

  constructor(private readonly meta: ReportMeta) {}

  /** Start recording one run; hand the result to {@link RunRecorder.finish} when it ends. */
  run(scenario: ScenarioName, strategy: StrategyName): RunRecorder {
    return new RunRecorder(scenario, strategy, (run) => this.runs.push(run));
  }

  data(notes: readonly string[]): ReportData {
    return { meta: this.meta, runs: [...this.runs], notes };
  }
}

export class RunRecorder implements WorkloadTrace {
  private startedAt: number | undefined;
  private readonly reads: ReportRead[] = [];
  private readonly replica: ReportReplicaState[] = [];
  /** The routed read in progress: the router reports its decision before the read returns. */
  private decision: ReadOutcome | undefined;
  private routed = false;
  /** The latest `replica-state` of each replica. */
  private readonly latest = new Map<string, ReplicaState<unknown>>();

  constructor(
    readonly scenario: ScenarioName,
    readonly strategy: StrategyName,
    private readonly done: (run: ReportRun) => void,
  ) {}

  begin(): void {
    this.startedAt = performance.now();
  }

  read(read: TracedRead): void {
    const at = this.seconds(read.startedAt);
    const decided = this.decision;
    this.decision = undefined;
    for (const state of this.latest.values()) this.noteState(state, read.startedAt, false);
    if (read.error) {
      this.reads.push({ at, ms: undefined, outcome: 'error' });
      return;
    }
    // Strategies without a router have only a target; the router's own outcome is finer.
    const outcome: ReadOutcome = this.routed && decided !== undefined ? decided : read.target;
    this.reads.push({ at, ms: read.ms, outcome });
  }

  /** Listen to the run's router (tidemark, shadow, and the `--via` front doors over it). */
  readonly observeRouter = <P, C>(router: Router<P, C>): void => {
    this.routed = true;
    router.events.on('decision', (decision) => {
      this.decision = routeOutcome(decision.reason);
    });
    router.events.on('replica-state', (state) => {
      this.latest.set(state.id, state);
      this.noteState(state, performance.now(), true);
    });
  };

  /** `at` in `performance.now()` time: the router's default clock. */
  private noteState(state: ReplicaState<unknown>, at: number, event: boolean): void {
    this.replica.push({
      at,
      event,
      replica: state.id,
      lagSeconds: state.lagSeconds,
      stalenessSeconds: stalenessSeconds(state, at),
      paused: state.paused,
      reachable: state.reachable,
    });
  }

  /** The run's result line: the run is complete. */
  finish(result: RunResult): void {
    const zero = this.startedAt ?? 0;
    // States from before the first write (router start-up) collapse onto time 0: the last one
    // is the state the run started in.
    const replica = this.replica.map((s) => ({ ...s, at: Math.max(0, (s.at - zero) / 1000) }));
    const firstInRun = replica.findIndex((s) => s.at > 0);
    const from = firstInRun === -1 ? replica.length - 1 : Math.max(0, firstInRun - 1);
    this.done({ result, reads: this.reads, replica: replica.slice(Math.max(0, from)) });
  }

  private seconds(at: number): number {
    return (at - (this.startedAt ?? at)) / 1000;
  }
}
