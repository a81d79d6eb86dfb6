import type { PrimaryVerdict } from '@tidemark/core/adapter';
import type { PrimaryIdentity } from './flavour.js';

/**
 * The last history verdict per judged position. The router asks for one on every MariaDB read
 * with a token, and a position decoded from many users' tokens is one (frozen, memoized) object;
 * a verdict depends on nothing but the primary's position, the primary's identity (both replaced
 * by every primary probe) and the position judged, so it is reused while all three are the same
 * objects.
 */
export class VerdictMemo<P> {
  private readonly last = new WeakMap<
    object,
    { primary: P; identity: PrimaryIdentity | undefined; verdict: PrimaryVerdict }
  >();

  judge(
    primary: P,
    required: P,
    identity: PrimaryIdentity | undefined,
    classify: () => PrimaryVerdict,
  ): PrimaryVerdict {
    const key = required as object;
    const known = this.last.get(key);
    if (known?.primary === primary && known.identity === identity) return known.verdict;
    const verdict = classify();
    this.last.set(key, { primary, identity, verdict });
    return verdict;
  }
}
