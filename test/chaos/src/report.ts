// Printing a campaign's result. The last line is the one machines read.
import type { CampaignResult } from './campaign.js';
import { ANOMALY_CLASSES, type CheckResult } from './checker.js';
import { FAULT_KINDS } from './faults.js';

/** Anomalies quoted in full; the rest are counted. */
const QUOTED_ANOMALIES = 12;

/** The closing line: `chaos: operations=N faults=N anomalies=N lost_writes_staged=N lost_writes_reported=N`. */
export function closingLine(result: CampaignResult): string {
  const { check } = result;
  return `chaos: operations=${result.history.operations.length} faults=${result.faults} anomalies=${check.anomalies} lost_writes_staged=${check.lostWritesStaged} lost_writes_reported=${check.lostWritesReported}`;
}

/**
 * True when the campaign failed: anomalies, unreported lost writes, an error that would have
 * crashed the app, or an unfinished check.
 */
export function failed(result: CampaignResult): boolean {
  return (
    result.check.anomalies > 0 ||
    result.check.lostWritesReported !== result.check.lostWritesStaged ||
    result.uncaught.length > 0 ||
    result.incomplete !== undefined
  );
}

export function formatReport(result: CampaignResult): string[] {
  const lines: string[] = [];
  const ops = result.history.operations;
  const { check } = result;

  lines.push(
    `summary: target=${result.target} (${result.version}) control=${result.control} tokens=${result.tokens} writes=${result.writes} settle=${result.settle} seed=${result.seed} duration=${result.durationSec}s sessions=${result.sessions}`,
  );
  const faultParts = FAULT_KINDS.filter((kind) => {
    const c = result.faultCounts[kind];
    return c.injected + c.failed + c.healFailed > 0;
  }).map((kind) => {
    const c = result.faultCounts[kind];
    const extra = [
      c.failed > 0 ? `failed=${c.failed}` : '',
      c.healFailed > 0 ? `heal_failed=${c.healFailed}` : '',
    ]
      .filter(Boolean)
      .join(' ');
    return `${kind}=${c.injected}${extra ? ` (${extra})` : ''}`;
  });
  lines.push(`faults: ${faultParts.length > 0 ? faultParts.join(' ') : 'none'}`);
  const skipped = ['cut-off', 'freeze', 'rejoin', 'promote-partial', 'follow-diverged'].filter(
    (capability) => !result.capabilities.includes(capability as never),
  );
  if (skipped.length > 0) {
    lines.push(`faults not staged (capability missing in this cluster): ${skipped.join(', ')}`);
  }
  const notes = Object.entries(result.faultNotes);
  if (notes.length > 0) lines.push(`promotions: ${notes.map(([k, v]) => `${k}=${v}`).join(' ')}`);

  const lostByFailover = new Map<number, { lost: number; reported: number }>();
  for (const lost of check.lostWrites) {
    if (lost.failover === undefined) continue;
    const entry = lostByFailover.get(lost.failover) ?? { lost: 0, reported: 0 };
    entry.lost++;
    if (lost.reported) entry.reported++;
    lostByFailover.set(lost.failover, entry);
  }
  for (const f of result.history.failovers) {
    const lost = lostByFailover.get(f.index) ?? { lost: 0, reported: 0 };
    lines.push(
      `failover #${f.index} ${f.kind} ${f.oldPrimary} -> ${f.promoted} at ${(f.crashAt / 1000).toFixed(1)}s (app ready +${((f.readyAt - f.crashAt) / 1000).toFixed(1)}s): finished writes absent=${f.absent.length}, acknowledged lost=${lost.lost}, reported=${lost.reported}`,
    );
  }

  for (const kind of ['write', 'read'] as const) {
    const mine = ops.filter((op) => op.kind === kind);
    const ok = mine.filter((op) => op.ok).length;
    const byClass = tally(mine.filter((op) => !op.ok).map((op) => op.errorClass ?? 'unknown'));
    const reports = mine.filter((op) => op.lostReport !== undefined).length;
    lines.push(
      `${kind}s: ${mine.length} ok=${ok}${formatTally(byClass, ' ')}${reports > 0 ? ` lost_reports=${reports}` : ''}`,
    );
  }
  const codes = tally(
    ops.filter((op) => !op.ok).map((op) => `${op.errorClass ?? '?'}:${op.errorCode ?? '?'}`),
  );
  if (Object.keys(codes).length > 0) lines.push(`errors by code:${formatTally(codes, ' ')}`);
  const unexpected = ops.filter((op) => op.errorClass === 'unexpected');
  for (const op of unexpected.slice(0, 5)) {
    lines.push(
      `  unexpected: s${op.session}#${op.index} ${op.kind} at ${(op.start / 1000).toFixed(1)}s ${op.errorCode}: ${(op.errorMessage ?? '').slice(0, 200)}`,
    );
  }
  const reasons = tally(
    ops.filter((op) => op.ok && op.kind === 'read').map((op) => op.reason ?? '?'),
  );
  lines.push(`reads by route:${formatTally(reasons, ' ')}`);
  if (result.control === 'tidemark') {
    const a = result.app;
    lines.push(
      `router: generations=${a.generations} other_history_events=${a.otherHistoryEvents} lost_write_events=${a.lostWriteEvents} lost_write_outcomes=${a.lostWriteOutcomes} settle_errors=${a.settleErrors} cap_rejections=${a.capRejections} retries=${a.retries} waits=${a.waits} (reached ${a.waitsReached})`,
    );
  }

  lines.push(...formatCheck(check));
  if (result.uncaught.length > 0) {
    lines.push(
      `uncaught driver errors (each would have crashed an app process): ${result.uncaught.length}`,
    );
    for (const text of [...new Set(result.uncaught)].slice(0, 5)) lines.push(`  ${text}`);
  }
  if (result.incomplete) lines.push(`incomplete: ${result.incomplete}`);
  lines.push(closingLine(result));
  return lines;
}

/** The checker's part of the report. */
export function formatCheck(check: CheckResult): string[] {
  const lines: string[] = [];
  lines.push(
    `checker: reads checked=${check.checkedReads} anomalies=${check.anomalies} (${ANOMALY_CLASSES.map((c) => `${c}=${check.byClass[c]}`).join(' ')}) reports_without_loss=${check.reportsWithoutLoss}`,
  );
  const byRoute = new Map<string, string>();
  for (const anomaly of check.details) {
    if (anomaly.route) byRoute.set(`${anomaly.session}:${anomaly.index}`, anomaly.route);
  }
  if (byRoute.size > 0) {
    lines.push(`anomalous reads by route:${formatTally(tally(byRoute.values()), ' ')}`);
  }
  for (const anomaly of check.details.slice(0, QUOTED_ANOMALIES)) {
    lines.push(
      `  ${anomaly.class}: s${anomaly.session}#${anomaly.index} at ${(anomaly.at / 1000).toFixed(1)}s: ${anomaly.detail}`,
    );
  }
  if (check.details.length > QUOTED_ANOMALIES) {
    lines.push(`  ... and ${check.details.length - QUOTED_ANOMALIES} more`);
  }
  const unreported = check.lostWrites.filter((w) => !w.reported);
  lines.push(
    `lost writes: staged=${check.lostWritesStaged} reported=${check.lostWritesReported}${
      unreported.length > 0
        ? ` unreported: ${unreported
            .slice(0, 10)
            .map((w) => `s${w.session}/id ${w.writeId} (failover #${w.failover ?? 'none'})`)
            .join(', ')}${unreported.length > 10 ? ', ...' : ''}`
        : ''
    }`,
  );
  const how = tally(unreported.map((w) => w.howMissed ?? '?'));
  if (unreported.length > 0) {
    lines.push(
      `unreported lost writes, how the session moved past the loss:${formatTally(how, ' ')}`,
    );
  }
  return lines;
}

function tally(values: Iterable<string>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const value of values) counts[value] = (counts[value] ?? 0) + 1;
  return counts;
}

function formatTally(counts: Record<string, number>, prefix: string): string {
  return Object.entries(counts)
    .sort((a, b) => b[1] - a[1])
    .map(([key, count]) => `${prefix}${key}=${count}`)
    .join('');
}
