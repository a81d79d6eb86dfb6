import { currentSession, Session, type SigningKey, TokenCodec } from '@tidemark/core';
import type { PositionCodec } from '@tidemark/core/adapter';
import { type CarrierScope, isRejection, TokenCarrier } from '@tidemark/http';
import { CLUSTER_NAME } from '../context.js';
import {
  check,
  errorCode,
  newOrder,
  sessionPosition,
  tally,
  twoReplicas,
  waitForCatchUp,
} from '../kit.js';
import type { Scenario } from '../scenario.js';

const SESSIONS = 20;
const CAP = { burst: 100, ratePerSecond: 0 };
const KEY: SigningKey = { id: 'k1', secret: 'conformance-two-sources-signing-key-0123' };
const COOKIE = 'tidemark';
const HEADER = 'x-tidemark-token';

/** A request as the HTTP carrier sees it: T1 in the header, T2 in the cookie. */
function twoSourceRequest(header: string, cookie: string) {
  const headers: Record<string, string> = {
    [HEADER]: header,
    cookie: `theme=dark; ${COOKIE}=${cookie}`,
  };
  return { header: (name: string) => headers[name], secure: false, source: 'conformance' };
}

/**
 * The control carrier: the behaviour before tokens from all sources were merged. The first
 * source that verifies wins (the header before the cookie) and its token is the session.
 */
function firstValidSource(tokens: TokenCodec, header: string, cookie: string): Session {
  for (const text of [header, cookie]) {
    try {
      return Session.fromToken(tokens.decode(text));
    } catch {
      // Next source.
    }
  }
  return new Session();
}

/** The cluster's position in a token written back, or undefined when none was written. */
function writtenPosition<P>(
  tokens: TokenCodec,
  codec: PositionCodec<P>,
  text: string | undefined,
): P | undefined {
  if (text === undefined) return undefined;
  const position = tokens.decode(text).positions[CLUSTER_NAME];
  return position === undefined ? undefined : codec.decode(position);
}

function responseTokens(scope: CarrierScope): { cookie?: string; header?: string } {
  const out: { cookie?: string; header?: string } = {};
  for (const [name, value] of scope.responseHeaders(false)) {
    if (name === 'set-cookie') out.cookie = (value.split(';')[0] ?? '').slice(COOKIE.length + 1);
    if (name === HEADER) out.header = value;
  }
  return out;
}

/**
 * A session wrote W1 (token T1) and later W2 (token T2); a request carries T1 in a header (a
 * service or script that kept the older token) and T2 in the cookie. Replay is paused on both
 * replicas after they applied every W1, so a replica covers T1 but not T2. Through the real HTTP
 * carrier the request must see W2 and get back a token at least T2. The control carrier keeps
 * the first valid source (the header): routed on T1 it reads a replica, misses W2, and the token
 * it would write back lowers the cookie below T2.
 */
export const tokenTwoSources: Scenario = {
  name: 'token-two-sources',
  summary:
    'older token in the header, newer in the cookie: carrier merges, sees W2; first-valid-source control misses',
  freshCluster: false,
  needs: ['pause'],
  async run(ctx) {
    const { workload, cluster } = ctx;
    const replicas = twoReplicas(ctx);
    // Paused replicas must stay eligible for the whole run: only the token may keep reads off.
    const handle = await ctx.router({
      fallback: CAP,
      wait: { budgetMs: 100 },
      health: { maxLagSeconds: 3600 },
    });
    const { router, codec } = handle;
    const tokens = new TokenCodec({ keys: [KEY] });
    const carrier = new TokenCarrier({ tokens, routers: [router], logger: false });

    // W1 for every session, applied everywhere; then replay stops; then W2.
    const sessions: Array<{
      session: Session;
      customer: number;
      w1: number;
      w2: number;
      t1: string;
      t2: string;
    }> = [];
    for (let i = 0; i < SESSIONS; i++) {
      const session = new Session();
      const customer = ctx.nextId();
      const w1 = newOrder(ctx, customer, `two sources W1 ${i}`);
      await router.write(session, (c) => workload.insertOrder(c, w1));
      sessions.push({
        session,
        customer,
        w1: w1.id,
        w2: 0,
        t1: tokens.encode(session.toTokenData()),
        t2: '',
      });
    }
    await waitForCatchUp(ctx);
    for (const name of replicas) await cluster.pauseReplay(name);
    for (const entry of sessions) {
      const w2 = newOrder(ctx, entry.customer, 'two sources W2');
      await router.write(entry.session, (c) => workload.insertOrder(c, w2));
      entry.w2 = w2.id;
      entry.t2 = tokens.encode(entry.session.toTokenData());
    }
    // The premise, checked on the replicas themselves: each covers every T1 and no T2.
    let premiseBroken = 0;
    const inspector = ctx.inspector();
    for (const name of replicas) {
      const { applied } = await inspector.probe(name, {
        signal: AbortSignal.timeout(5000),
        primary: undefined,
      });
      for (const entry of sessions) {
        const t1 = codec.decode(tokens.decode(entry.t1).positions[CLUSTER_NAME] ?? '');
        const t2 = sessionPosition(handle, entry.session);
        if (codec.compare(applied, t1) !== 'covered' || codec.compare(applied, t2) === 'covered')
          premiseBroken++;
      }
    }
    // Let the monitor see the replicas as they are now.
    await router.ready();

    let routerMisses = 0;
    let responseBelowT2 = 0;
    let noResponseToken = 0;
    const errors: string[] = [];
    const targets: string[] = [];
    for (const entry of sessions) {
      const t2 = sessionPosition(handle, entry.session);
      const scope = await carrier.begin(twoSourceRequest(entry.t1, entry.t2));
      if (isRejection(scope)) {
        errors.push(scope.rejected.body.error);
        continue;
      }
      try {
        const { value, decision } = await scope.run(() =>
          router.readDetailed(currentSession(), (c) => workload.ordersOf(c, entry.customer)),
        );
        targets.push(decision.target);
        if (!value.includes(entry.w2)) routerMisses++;
      } catch (error) {
        errors.push(errorCode(error));
        continue;
      }
      const written = responseTokens(scope);
      if (written.cookie === undefined || written.header === undefined) noResponseToken++;
      for (const text of [written.cookie, written.header]) {
        const position = writtenPosition(tokens, codec, text);
        if (position !== undefined && codec.compare(position, t2) !== 'covered') responseBelowT2++;
      }
    }

    // Control: the same router and the same requests, through a first-valid-source carrier.
    let controlMisses = 0;
    let controlLowered = 0;
    const controlTargets: string[] = [];
    for (const entry of sessions) {
      const t2 = sessionPosition(handle, entry.session);
      const session = firstValidSource(tokens, entry.t1, entry.t2);
      const { value, decision } = await router.readDetailed(session, (c) =>
        workload.ordersOf(c, entry.customer),
      );
      controlTargets.push(decision.target);
      if (!value.includes(entry.w2)) controlMisses++;
      // What that carrier writes back after the read: the session it routed on.
      const back = session.position(CLUSTER_NAME, codec);
      if (back === undefined || codec.compare(back, t2) !== 'covered') controlLowered++;
    }

    const m = router.metrics();
    const carried = carrier.metrics();
    return {
      counts: {
        router_misses: routerMisses,
        control_misses: controlMisses,
        response_below_t2: responseBelowT2,
        control_lowered: controlLowered,
        source_merges: carried.sourceMerges,
        fallbacks: m.primaryReads,
        waits: m.waits,
        reads: m.reads,
        errors: errors.length,
        premise_broken: premiseBroken,
      },
      checks: [
        check(
          'premise-replicas-cover-t1-not-t2',
          premiseBroken === 0,
          `${premiseBroken} (replica, session) pairs where a replica lacked T1 or had T2 (expected 0: replay paused after every W1 applied)`,
        ),
        check(
          'router-no-miss',
          routerMisses === 0 && errors.length === 0,
          `through the carrier, reads missed W2 ${routerMisses} of ${SESSIONS} times; errors ${JSON.stringify(tally(errors))}; targets ${JSON.stringify(tally(targets))}`,
        ),
        check(
          'response-token-at-least-t2',
          responseBelowT2 === 0 && noResponseToken === 0,
          `${responseBelowT2} written tokens below T2, ${noResponseToken} responses without a cookie and header token (expected 0 and 0: the header carried less than the merge)`,
        ),
        check(
          'sources-merged',
          carried.sourceMerges === SESSIONS,
          `carrier counted ${carried.sourceMerges} merged requests (expected ${SESSIONS})`,
        ),
        check(
          'control-misses-all',
          controlMisses === SESSIONS,
          `first-valid-source control missed W2 ${controlMisses} of ${SESSIONS} times (must miss all: routed on T1, which the paused replicas cover); targets ${JSON.stringify(tally(controlTargets))}`,
        ),
        check(
          'control-lowers-token',
          controlLowered === SESSIONS,
          `first-valid-source control would write back a token below T2 ${controlLowered} of ${SESSIONS} times (expected all)`,
        ),
      ],
    };
  },
};
