import { DECISION_REASONS, type DecisionReason, type RouteDecision } from './decision.js';

/** Plain counters; a snapshot is a copy, safe to export to any metrics system. */
export interface RouterMetricsSnapshot {
  readonly reads: number;
  readonly replicaReads: number;
  readonly primaryReads: number;
  /** Share of reads served by replicas, 0..1 (0 when there were no reads). */
  readonly replicaShare: number;
  readonly staleReads: number;
  readonly byReason: Readonly<Record<DecisionReason, number>>;
  readonly waits: number;
  readonly waitsReached: number;
  readonly waitMsTotal: number;
  readonly capRejections: number;
  readonly retries: number;
  readonly badTokens: number;
  readonly otherHistory: number;
  /** Reads refused or sent to the primary because the history check could not answer. */
  readonly historyUnverified: number;
  /** Writes after which the session's earlier position was found lost (or unverifiable). */
  readonly lostWrites: number;
  /** Times a replica was found on another history than the primary's and left out of routing. */
  readonly replicasDiverged: number;
  readonly writes: number;
  /** Leases taken back before their holder released them (close, `maxHoldMs`, abort). */
  readonly leasesRevoked: number;
}

/** Counters the router keeps for {@link Router.metrics}. Per-event detail goes through events. */
export class RouterMetrics {
  reads = 0;
  replicaReads = 0;
  primaryReads = 0;
  staleReads = 0;
  waits = 0;
  waitsReached = 0;
  waitMsTotal = 0;
  capRejections = 0;
  retries = 0;
  badTokens = 0;
  otherHistory = 0;
  historyUnverified = 0;
  lostWrites = 0;
  replicasDiverged = 0;
  writes = 0;
  leasesRevoked = 0;
  private readonly byReason = Object.fromEntries(DECISION_REASONS.map((r) => [r, 0])) as Record<
    DecisionReason,
    number
  >;

  record(decision: RouteDecision): void {
    this.reads++;
    if (decision.target === 'primary') this.primaryReads++;
    else this.replicaReads++;
    if (decision.stale) this.staleReads++;
    this.byReason[decision.reason]++;
  }

  recordWait(ms: number, reached: boolean): void {
    this.waits++;
    if (reached) this.waitsReached++;
    this.waitMsTotal += ms;
  }

  snapshot(): RouterMetricsSnapshot {
    return {
      reads: this.reads,
      replicaReads: this.replicaReads,
      primaryReads: this.primaryReads,
      replicaShare: this.reads === 0 ? 0 : this.replicaReads / this.reads,
      staleReads: this.staleReads,
      byReason: { ...this.byReason },
      waits: this.waits,
      waitsReached: this.waitsReached,
      waitMsTotal: this.waitMsTotal,
      capRejections: this.capRejections,
      retries: this.retries,
      badTokens: this.badTokens,
      otherHistory: this.otherHistory,
      historyUnverified: this.historyUnverified,
      lostWrites: this.lostWrites,
      replicasDiverged: this.replicasDiverged,
      writes: this.writes,
      leasesRevoked: this.leasesRevoked,
    };
  }
}
