import type { PositionCodec } from './position.js';
import type { TokenData } from './token.js';

interface Entry {
  text: string;
  /** Decoded form, cached per codec so routing does not re-parse on every read. */
  decoded?: { codec: PositionCodec<unknown>; position: unknown };
}

/**
 * A session's high-water marks, one position per cluster. Create one per user (or request) and
 * carry it between requests as a token. Positions only ever move forward: {@link Session.raise}
 * merges, it never replaces.
 */
export class Session {
  private readonly entries = new Map<string, Entry>();
  private changes = 0;

  /** Build a session from decoded token data (see {@link TokenCodec.decode}). */
  static fromToken(data: TokenData | undefined): Session {
    const session = new Session();
    if (data) {
      for (const [cluster, text] of Object.entries(data.positions)) {
        session.entries.set(cluster, { text });
      }
    }
    return session;
  }

  /** Number of times a position was raised; carriers compare it to know when to write back. */
  get version(): number {
    return this.changes;
  }

  /** Cluster names this session holds a position for. */
  clusters(): string[] {
    return [...this.entries.keys()];
  }

  /** The encoded position for a cluster, as it would appear in a token. */
  positionText(cluster: string): string | undefined {
    return this.entries.get(cluster)?.text;
  }

  /**
   * The decoded position for a cluster, or undefined when the session has none.
   * Throws the codec's TokenError when the stored text is not a valid position.
   */
  position<P>(cluster: string, codec: PositionCodec<P>): P | undefined {
    const entry = this.entries.get(cluster);
    if (!entry) return undefined;
    if (entry.decoded?.codec !== codec) {
      entry.decoded = {
        codec: codec as PositionCodec<unknown>,
        position: codec.decode(entry.text),
      };
    }
    return entry.decoded.position as P;
  }

  /**
   * Raise the cluster's position to at least `position` (least upper bound with what is held).
   * Returns true when the stored position changed.
   */
  raise<P>(cluster: string, codec: PositionCodec<P>, position: P): boolean {
    let current: P | undefined;
    try {
      current = this.position(cluster, codec);
    } catch {
      // A stored position that does not decode protects nothing; the new one replaces it.
      current = undefined;
    }
    const next = current === undefined ? position : codec.merge(current, position);
    const text = codec.encode(next);
    const entry = this.entries.get(cluster);
    if (entry?.text === text) return false;
    this.entries.set(cluster, {
      text,
      decoded: { codec: codec as PositionCodec<unknown>, position: next },
    });
    this.changes++;
    return true;
  }

  /** Forget the cluster's position (for example after a lost write was handled). */
  forget(cluster: string): void {
    if (this.entries.delete(cluster)) this.changes++;
  }

  /** Plain data for {@link TokenCodec.encode}. */
  toTokenData(): { positions: Record<string, string> } {
    // fromEntries defines own properties, so a cluster named __proto__ is kept as data.
    const positions: Record<string, string> = Object.fromEntries(
      [...this.entries].map(([cluster, entry]) => [cluster, entry.text]),
    );
    return { positions };
  }
}
