import {
  ConfigError,
  DECISION_REASONS,
  type HealthOptions,
  type ReplicaState,
  type RouterMetricsSnapshot,
  routeOutcome,
} from '@tidemark/core';
import { isHealthy, type ReplicaHistory, stalenessSeconds } from '@tidemark/core/adapter';

/** `Content-Type` of the text exposition format 0.0.4. */
export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/**
 * What the formatter reads from a router: a `Router` of any adapter fits. Spelled out so that a
 * router of any position type is accepted without casts.
 */
export interface MetricsSource {
  readonly cluster: string;
  metrics(): RouterMetricsSnapshot;
  readonly monitor: { states(): ReadonlyArray<ReplicaState<unknown>> };
  readonly health: Readonly<HealthOptions>;
}

/** Options of {@link prometheusText} and {@link prometheusHandler}. */
export interface PrometheusOptions {
  /** Prefix of every metric name. Default `tidemark_`. */
  prefix?: string;
  /**
   * Monotonic clock of the routers, in milliseconds, to age the monitor's samples. Default
   * `performance.now()`, the router's default clock.
   */
  now?: () => number;
}

type Kind = 'counter' | 'gauge';
interface Sample {
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}
interface Family {
  readonly kind: Kind;
  readonly help: string;
  readonly samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const HISTORIES: readonly ReplicaHistory[] = ['current', 'diverged', 'unknown', 'unchecked'];

/**
 * Render the routers' counters (`router.metrics()`) and their replicas' state (the monitor's
 * view) in the Prometheus text exposition format 0.0.4. Every sample carries a `cluster` label,
 * so several routers share one page; each family is written once with its HELP and TYPE lines.
 * Counters end in `_total` and count since the router started. No token or position value is
 * ever a label.
 *
 * @throws ConfigError (`TIDEMARK_CONFIG`) on a prefix that is not a valid metric name start, or
 * two routers with the same cluster name (their series would collide).
 */
export function prometheusText(
  routers: MetricsSource | readonly MetricsSource[],
  options: PrometheusOptions = {},
): string {
  const list: readonly MetricsSource[] = Array.isArray(routers)
    ? routers
    : [routers as MetricsSource];
  const prefix = options.prefix ?? 'tidemark_';
  if (prefix !== '' && !METRIC_NAME.test(prefix)) {
    throw new ConfigError(`prefix ${JSON.stringify(prefix)} is not a valid metric name start.`);
  }
  const now = (options.now ?? (() => performance.now()))();
  const seen = new Set<string>();
  const families = new Map<string, Family>();
  const add = (name: string, kind: Kind, help: string, sample: Sample) => {
    let family = families.get(name);
    if (!family) {
      family = { kind, help, samples: [] };
      families.set(name, family);
    }
    family.samples.push(sample);
  };

  for (const router of list) {
    const cluster = router.cluster;
    if (seen.has(cluster)) {
      throw new ConfigError(`Two routers are named "${cluster}"; their series would collide.`);
    }
    seen.add(cluster);
    const m = router.metrics();
    const c = { cluster };
    for (const reason of DECISION_REASONS) {
      add('reads_total', 'counter', 'Reads served, by decision reason and outcome.', {
        labels: { ...c, reason, outcome: routeOutcome(reason) },
        value: m.byReason[reason],
      });
    }
    add('replica_reads_total', 'counter', 'Reads served by a replica.', {
      labels: c,
      value: m.replicaReads,
    });
    add('primary_reads_total', 'counter', 'Reads served by the primary.', {
      labels: c,
      value: m.primaryReads,
    });
    add(
      'stale_reads_total',
      'counter',
      "Reads served by a replica that may lack the session's writes (degraded stale).",
      { labels: c, value: m.staleReads },
    );
    add('waits_total', 'counter', 'Bounded waits for a replica to catch up, by result.', {
      labels: { ...c, result: 'reached' },
      value: m.waitsReached,
    });
    add('waits_total', 'counter', 'Bounded waits for a replica to catch up, by result.', {
      labels: { ...c, result: 'timeout' },
      value: m.waits - m.waitsReached,
    });
    add('wait_seconds_total', 'counter', 'Time spent waiting for replicas to catch up.', {
      labels: c,
      value: m.waitMsTotal / 1000,
    });
    add(
      'fallback_cap_rejections_total',
      'counter',
      'Reads refused a primary fallback because the fallback cap was spent.',
      { labels: c, value: m.capRejections },
    );
    add('read_retries_total', 'counter', 'Reads retried once after failing on their target.', {
      labels: c,
      value: m.retries,
    });
    add(
      'bad_tokens_total',
      'counter',
      'Session positions that were malformed, forged, oversized or impossible.',
      { labels: c, value: m.badTokens },
    );
    add(
      'other_history_tokens_total',
      'counter',
      'Session positions from another replication history (lost in a failover).',
      { labels: c, value: m.otherHistory },
    );
    add(
      'history_unverified_total',
      'counter',
      'Reads whose position could not be checked against the primary in time.',
      { labels: c, value: m.historyUnverified },
    );
    add(
      'lost_writes_total',
      'counter',
      "Writes after which the session's earlier write was found lost or unverifiable.",
      { labels: c, value: m.lostWrites },
    );
    add(
      'replica_divergences_total',
      'counter',
      "Times a replica was found on another history than the primary's.",
      { labels: c, value: m.replicasDiverged },
    );
    add('writes_total', 'counter', 'Writes run on the primary.', { labels: c, value: m.writes });
    add(
      'leases_revoked_total',
      'counter',
      'Leases taken back before their holder released them (router closed, maxHoldMs, abort).',
      { labels: c, value: m.leasesRevoked },
    );

    for (const state of router.monitor.states()) {
      const r = { cluster, replica: state.id };
      add('replica_up', 'gauge', '1 while the last probe or read of the replica succeeded.', {
        labels: r,
        value: state.reachable ? 1 : 0,
      });
      add(
        'replica_healthy',
        'gauge',
        '1 while the replica may serve reads (reachable, fresh sample, on the primary history, under the lag limit).',
        { labels: r, value: isHealthy(state, now, router.health) ? 1 : 0 },
      );
      add('replica_paused', 'gauge', '1 while the replica pauses applying changes on purpose.', {
        labels: r,
        value: state.paused ? 1 : 0,
      });
      for (const history of HISTORIES) {
        add(
          'replica_history',
          'gauge',
          "1 for the replica's current history verdict, 0 for the others.",
          { labels: { ...r, history }, value: state.history === history ? 1 : 0 },
        );
      }
      // Unknown values are left out rather than written as 0, which would read as "no lag".
      if (state.lagSeconds !== undefined) {
        add('replica_lag_seconds', 'gauge', 'Replication lag the replica reports.', {
          labels: r,
          value: state.lagSeconds,
        });
      }
      if (state.lagBytes !== undefined) {
        add('replica_lag_bytes', 'gauge', 'Log the replica has not applied yet, in bytes.', {
          labels: r,
          value: state.lagBytes,
        });
      }
      if (Number.isFinite(state.sampledAt)) {
        add(
          'replica_sample_age_seconds',
          'gauge',
          "Age of the monitor's latest sample of the replica's applied position.",
          { labels: r, value: Math.max(0, (now - state.sampledAt) / 1000) },
        );
        const staleness = stalenessSeconds(state, now);
        if (staleness !== undefined) {
          add(
            'replica_staleness_seconds',
            'gauge',
            'How far the replica trails the primary: the larger of its own lag and the time since it last had everything the primary had.',
            { labels: r, value: staleness },
          );
        }
      }
    }
  }

  const lines: string[] = [];
  for (const [name, family] of families) {
    const full = prefix + name;
    lines.push(`# HELP ${full} ${escapeHelp(family.help)}`);
    lines.push(`# TYPE ${full} ${family.kind}`);
    for (const sample of family.samples) {
      lines.push(`${full}${formatLabels(sample.labels)} ${formatValue(sample.value)}`);
    }
  }
  return lines.length === 0 ? '' : `${lines.join('\n')}\n`;
}

/**
 * A request handler for Node's `http` server, Express or any framework with the same response
 * methods: answers every request with the exposition of `routers`.
 */
export function prometheusHandler(
  routers: MetricsSource | readonly MetricsSource[],
  options: PrometheusOptions = {},
): (request: unknown, response: PrometheusResponse) => void {
  return (_request, response) => {
    const body = prometheusText(routers, options);
    response.statusCode = 200;
    response.setHeader('Content-Type', PROMETHEUS_CONTENT_TYPE);
    response.end(body);
  };
}

/** The part of Node's `ServerResponse` the handler uses. */
export interface PrometheusResponse {
  statusCode: number;
  setHeader(name: string, value: string): unknown;
  end(body: string): unknown;
}

/** Label values escape backslash, double quote and line feed (format 0.0.4). */
export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

/** HELP text escapes backslash and line feed only (format 0.0.4). */
function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function formatLabels(labels: Readonly<Record<string, string>>): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${escapeLabelValue(v)}"`);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

/** Go's ParseFloat spellings, which Prometheus uses for the non-finite values. */
function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}
