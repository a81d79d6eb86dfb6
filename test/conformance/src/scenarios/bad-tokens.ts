import {
  ErrorCode,
  isTidemarkError,
  Session,
  type SigningKey,
  TokenCodec,
  TokenError,
} from '@tidemark/core';
import { CLUSTER_NAME } from '../context.js';
import { check, errorCode, newOrder } from '../kit.js';
import type { Scenario } from '../scenario.js';
import type { Check } from '../types.js';

const KEY: SigningKey = { id: 'k1', secret: 'conformance-suite-signing-key-0123456789' };
/** Same key id, different secret: what a forger without the secret can do. */
const FORGER_KEY: SigningKey = { id: 'k1', secret: 'not-the-real-secret-but-just-as-long-0000' };

/** What a decode attempt produced: the error code, or `accepted`. */
function decodeOutcome(codec: TokenCodec, text: string): string {
  try {
    codec.decode(text);
    return 'accepted';
  } catch (error) {
    return error instanceof TokenError ? error.code : `untyped ${errorCode(error)}`;
  }
}

/**
 * Bad tokens never crash the router and never widen access (invariant 8). Codec level: garbage,
 * wrong version, unsigned, forged, tampered and oversized tokens are rejected with their stable
 * codes. Router level (tokens that are validly signed but carry a bad position): an invalid
 * position and an impossible one (far ahead of the primary) are rejected under badToken 'reject'
 * and read as if there were no position under 'ignore'; both are counted in badTokens. Controls:
 * a genuine token is accepted and reads the own write, the forged token is valid under the
 * forger's own key and its body decodes without verification, and the impossible position is well-formed for the adapter's codec.
 */
export const badTokens: Scenario = {
  name: 'bad-tokens',
  summary:
    'malformed/forged/oversized/impossible tokens: typed errors, counted; ignore policy reads on',
  freshCluster: false,
  async run(ctx) {
    const { workload, target } = ctx;
    const checks: Check[] = [];
    const codec = new TokenCodec({ keys: [KEY] });
    const forger = new TokenCodec({ keys: [FORGER_KEY] });
    const unverified = new TokenCodec({ requireSignature: false });

    const reject = await ctx.router();
    const ignore = await ctx.router({ badToken: 'ignore' });
    const writer = new Session();
    const order = newOrder(ctx, ctx.nextId(), 'genuine token');
    await reject.router.write(writer, (c) => workload.insertOrder(c, order));
    const genuine = codec.encode(writer.toTokenData());
    const positions = writer.toTokenData().positions;
    const read = (session: Session, handle = reject) =>
      handle.router.readDetailed(session, (c) => workload.ordersOf(c, order.customer));

    // Positive control: the genuine token decodes and its read shows the write.
    const genuineRead = await read(Session.fromToken(codec.decode(genuine)));
    checks.push(
      check(
        'genuine-token-accepted',
        genuineRead.value.includes(order.id),
        `genuine token read via ${genuineRead.decision.target}/${genuineRead.decision.reason}, own write ${genuineRead.value.includes(order.id) ? 'visible' : 'MISSING'}`,
      ),
    );

    // Codec level.
    const [body, signature = ''] = genuine.split('~~');
    const forged = forger.encode({ positions });
    const tampered = `${body}0~~${signature}`;
    const cases: Array<[string, string, string]> = [
      ['garbage', 'this is not a token', ErrorCode.TokenMalformed],
      ['wrong-prefix', `xx1~${body!.slice(4)}`, ErrorCode.TokenMalformed],
      ['future-version', `tm9~${body!.slice(4)}`, ErrorCode.TokenVersion],
      ['unsigned', body!, ErrorCode.TokenUnsigned],
      ['forged', forged, ErrorCode.TokenSignature],
      ['tampered', tampered, ErrorCode.TokenSignature],
      ['oversized', `tm1~${'a'.repeat(10_000)}`, ErrorCode.TokenTooLarge],
    ];
    let codecRejections = 0;
    for (const [label, text, expected] of cases) {
      const outcome = decodeOutcome(codec, text);
      if (outcome === expected) codecRejections++;
      checks.push(
        check(
          `codec-${label}`,
          outcome === expected,
          `${label}: ${outcome} (expected ${expected})`,
        ),
      );
    }
    // Controls: the forgery is a valid token under the forger's own secret, and its body decodes
    // without signature checks; so only the signature (the secret) makes the codec reject it.
    const forgedBody = forged.split('~~')[0]!;
    const controls = {
      genuine: decodeOutcome(codec, genuine),
      forgedWithForgerKey: decodeOutcome(forger, forged),
      forgedBodyUnverified: decodeOutcome(unverified, forgedBody),
    };
    checks.push(
      check(
        'control-forged-is-well-formed',
        Object.values(controls).every((outcome) => outcome === 'accepted'),
        `${JSON.stringify(controls)} (all must be accepted)`,
      ),
    );

    // Router level: validly signed tokens carrying bad positions.
    const primaryNow = await ctx.inspector().probePrimary({ signal: AbortSignal.timeout(5000) });
    const impossibleText = reject.codec.encode(target.badPositions.impossible(primaryNow));
    let wellFormed = true;
    try {
      reject.codec.decode(impossibleText);
    } catch {
      wellFormed = false;
    }
    checks.push(
      check(
        'control-impossible-is-well-formed',
        wellFormed,
        `impossible position ${impossibleText} ${wellFormed ? 'decodes' : 'does not decode'} with the adapter codec (must decode: only the primary check can reject it)`,
      ),
    );
    const routed: Array<[string, string, string]> = [
      ['invalid-position', target.badPositions.invalidText, ErrorCode.PositionInvalid],
      ['impossible', impossibleText, ErrorCode.TokenImpossible],
    ];
    let routerRejections = 0;
    let ignoredReads = 0;
    for (const [label, positionText, expected] of routed) {
      const text = codec.encode({ positions: { [CLUSTER_NAME]: positionText } });
      const session = () => Session.fromToken(codec.decode(text));
      let rejected = 'read succeeded';
      try {
        await read(session());
      } catch (error) {
        rejected = isTidemarkError(error) ? error.code : `untyped ${errorCode(error)}`;
      }
      if (rejected === expected) routerRejections++;
      checks.push(
        check(
          `router-reject-${label}`,
          rejected === expected,
          `badToken 'reject', ${label}: ${rejected} (expected ${expected})`,
        ),
      );
      let ignored: string;
      try {
        const result = await read(session(), ignore);
        ignored = `${result.decision.target}/${result.decision.reason}`;
        if (result.decision.reason === 'bad-token-ignored' || result.decision.target === 'primary')
          ignoredReads++;
      } catch (error) {
        ignored = `threw ${errorCode(error)}`;
      }
      checks.push(
        check(
          `router-ignore-${label}`,
          !ignored.startsWith('threw'),
          `badToken 'ignore', ${label}: ${ignored} (expected the read to proceed)`,
        ),
      );
    }
    const rejectMetrics = reject.router.metrics();
    const ignoreMetrics = ignore.router.metrics();
    checks.push(
      check(
        'bad-tokens-counted',
        rejectMetrics.badTokens === routed.length && ignoreMetrics.badTokens === routed.length,
        `metrics.badTokens: ${rejectMetrics.badTokens} ('reject'), ${ignoreMetrics.badTokens} ('ignore'); expected ${routed.length} each`,
      ),
    );

    return {
      counts: {
        router_misses: genuineRead.value.includes(order.id) ? 0 : 1,
        fallbacks: rejectMetrics.primaryReads + ignoreMetrics.primaryReads,
        waits: rejectMetrics.waits + ignoreMetrics.waits,
        codec_rejections: codecRejections,
        router_rejections: routerRejections,
        ignored_reads: ignoredReads,
        bad_tokens_metric: rejectMetrics.badTokens + ignoreMetrics.badTokens,
      },
      checks,
    };
  },
};
