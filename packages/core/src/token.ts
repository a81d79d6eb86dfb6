import { createHmac, timingSafeEqual } from 'node:crypto';
import { ConfigError, ErrorCode, TokenError } from './errors.js';
import { POSITION_TEXT_PATTERN } from './position.js';

/**
 * The decoded content of a token: one encoded position per cluster name, and when it was issued.
 * Positions stay in their adapter's text form here; the router decodes them with the cluster's
 * codec when it needs them, so one token can span databases of different kinds.
 */
export interface TokenData {
  readonly positions: Readonly<Record<string, string>>;
  /**
   * Per cluster, the nodes (`primary` or replica ids) this session read from, or wrote to,
   * without settling the position yet (see `Session.toTokenData({ carryPending: true })`). The
   * next request settles them with a probe it sends, or reads the same replica again. Absent
   * when nothing is carried.
   */
  readonly pending?: Readonly<Record<string, readonly string[]>>;
  /** Unix time in seconds when the token was encoded. */
  readonly issuedAt: number;
}

/** A signing key. The first key of the list signs; every key verifies (rotation). */
export interface SigningKey {
  /** Short identifier written into the token, `[A-Za-z0-9_-]{1,16}`. */
  readonly id: string;
  /** At least 32 bytes of secret material. */
  readonly secret: string | Uint8Array;
}

export interface TokenCodecOptions {
  /** HMAC-SHA256 keys, newest first. With keys, tokens are signed and verified. */
  keys?: readonly SigningKey[];
  /** Reject unsigned tokens. Default: true when keys are given. */
  requireSignature?: boolean;
  /** Longest token text accepted, in characters. Default 2048 (fits any cookie). */
  maxLength?: number;
  /** Most clusters one token may name. Default 16. */
  maxClusters?: number;
  /** Reject tokens older than this. Default: no limit. */
  maxAgeSeconds?: number;
  /** Clock used for issuedAt and expiry, in ms. Default Date.now. */
  now?: () => number;
}

export const TOKEN_PREFIX = 'tm1';
const FIELD = '~';
const SIGNATURE_SEPARATOR = '~~';
const TOKEN_TEXT = /^[A-Za-z0-9_.~-]+$/;
const CLUSTER_NAME = /^[A-Za-z0-9_-]{1,64}$/;
const KEY_ID = /^[A-Za-z0-9_-]{1,16}$/;
const BASE36 = /^[0-9a-z]{1,10}$/;
/** Marks a pending field pair (`.<cluster>~<node>.<node>`): no cluster name starts with a dot. */
const PENDING_MARK = '.';
const NODE_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** Most nodes one cluster's pending entry may name in a token. */
export const MAX_PENDING_NODES = 8;
/** Tokens from clocks further ahead than this are not genuine. */
const FUTURE_SKEW_SECONDS = 300;
const MIN_SECRET_BYTES = 32;

/** True when `name` can be used as a cluster name in tokens. */
export function isClusterName(name: string): boolean {
  return CLUSTER_NAME.test(name);
}

/** True when `id` (a replica id, or `primary`) can be carried in a token's pending entries. */
export function isNodeId(id: string): boolean {
  return NODE_ID.test(id);
}

/** Throws a {@link ConfigError} unless `name` can be used as a cluster name in tokens. */
export function assertClusterName(name: string): void {
  if (!isClusterName(name)) {
    throw new ConfigError(
      `Cluster name ${JSON.stringify(name)} is not valid: use 1-64 characters from A-Z a-z 0-9 _ -.`,
    );
  }
}

/**
 * Encodes and decodes tokens: `tm1~<issuedAt base36>~<cluster>~<position>...[~~<keyId>~<hmac>]`.
 * Every character is URL-unreserved, so the text goes into cookies, headers and query strings
 * without escaping. Decoding is strict and bounded: length is checked before anything else, the
 * signature before the content is trusted.
 */
export class TokenCodec {
  private readonly keys: ReadonlyArray<{ id: string; secret: Buffer }>;
  private readonly requireSignature: boolean;
  private readonly maxLength: number;
  /** Most clusters one token may name (the `maxClusters` option). */
  readonly maxClusters: number;
  private readonly maxAgeSeconds: number | undefined;
  private readonly now: () => number;

  constructor(options: TokenCodecOptions = {}) {
    this.keys = (options.keys ?? []).map(validateKey);
    const ids = new Set(this.keys.map((k) => k.id));
    if (ids.size !== this.keys.length) throw new ConfigError('Signing key ids must be unique.');
    this.requireSignature = options.requireSignature ?? this.keys.length > 0;
    if (this.requireSignature && this.keys.length === 0) {
      throw new ConfigError('requireSignature is true but no signing keys were given.');
    }
    this.maxLength = positiveInteger('maxLength', options.maxLength ?? 2048);
    this.maxClusters = positiveInteger('maxClusters', options.maxClusters ?? 16);
    this.maxAgeSeconds =
      options.maxAgeSeconds === undefined
        ? undefined
        : positiveInteger('maxAgeSeconds', options.maxAgeSeconds);
    this.now = options.now ?? Date.now;
  }

  /** True when this codec signs the tokens it encodes. */
  get signs(): boolean {
    return this.keys.length > 0;
  }

  encode(data: {
    positions: Readonly<Record<string, string>>;
    pending?: Readonly<Record<string, readonly string[]>> | undefined;
    issuedAt?: number;
  }): string {
    const clusters = Object.keys(data.positions).sort();
    const pendingClusters =
      data.pending === undefined
        ? []
        : Object.keys(data.pending)
            .filter((cluster) => (data.pending?.[cluster]?.length ?? 0) > 0)
            .sort();
    const named =
      pendingClusters.length === 0
        ? clusters.length
        : new Set([...clusters, ...pendingClusters]).size;
    if (named > this.maxClusters) {
      throw new TokenError(
        ErrorCode.TokenTooLarge,
        `A token may name at most ${this.maxClusters} clusters; this one names ${named}. Raise maxClusters if this is intended.`,
      );
    }
    const issuedAt = data.issuedAt ?? Math.floor(this.now() / 1000);
    const fields = [TOKEN_PREFIX, Math.max(0, Math.floor(issuedAt)).toString(36)];
    for (const cluster of clusters) {
      assertClusterName(cluster);
      const position = data.positions[cluster] as string;
      if (!POSITION_TEXT_PATTERN.test(position)) {
        throw new TokenError(
          ErrorCode.PositionInvalid,
          `Position for cluster "${cluster}" contains characters that are not URL-safe; the adapter's codec must encode with A-Z a-z 0-9 - _ . only.`,
        );
      }
      fields.push(cluster, position);
    }
    for (const cluster of pendingClusters) {
      assertClusterName(cluster);
      const nodes = [...new Set(data.pending?.[cluster] ?? [])].sort();
      if (nodes.length > MAX_PENDING_NODES) {
        throw new TokenError(
          ErrorCode.TokenTooLarge,
          `Cluster "${cluster}" has ${nodes.length} nodes with pending positions; a token carries at most ${MAX_PENDING_NODES}. Settle the session first (await session.settled()).`,
        );
      }
      for (const node of nodes) {
        if (!NODE_ID.test(node)) {
          throw new TokenError(
            ErrorCode.PositionInvalid,
            `Node id ${JSON.stringify(node.slice(0, 80))} of cluster "${cluster}" cannot be carried in a token (1-64 characters from A-Z a-z 0-9 _ -). Settle the session first (await session.settled()).`,
          );
        }
      }
      fields.push(`${PENDING_MARK}${cluster}`, nodes.join('.'));
    }
    let text = fields.join(FIELD);
    const signer = this.keys[0];
    if (signer) text += `${SIGNATURE_SEPARATOR}${signer.id}${FIELD}${sign(signer.secret, text)}`;
    if (text.length > this.maxLength) {
      throw new TokenError(
        ErrorCode.TokenTooLarge,
        `Encoded token is ${text.length} characters, over the limit of ${this.maxLength}. Raise maxLength or depend on fewer clusters.`,
      );
    }
    return text;
  }

  /** Strictly decode token text. Throws {@link TokenError} with a stable code on any bad input. */
  decode(text: unknown): TokenData {
    if (typeof text !== 'string') {
      throw new TokenError(ErrorCode.TokenMalformed, 'Token must be a string.');
    }
    if (text.length > this.maxLength) {
      throw new TokenError(
        ErrorCode.TokenTooLarge,
        `Token is ${text.length} characters, over the limit of ${this.maxLength}; it was ignored.`,
      );
    }
    if (!TOKEN_TEXT.test(text)) {
      throw new TokenError(
        ErrorCode.TokenMalformed,
        'Token contains characters a token never has.',
      );
    }
    const firstField = text.slice(0, text.indexOf(FIELD));
    if (firstField !== TOKEN_PREFIX) {
      if (/^tm\d+$/.test(firstField)) {
        throw new TokenError(
          ErrorCode.TokenVersion,
          `Token format "${firstField}" is not supported by this version of Tidemark (expected ${TOKEN_PREFIX}); upgrade, or treat the session as new.`,
        );
      }
      throw new TokenError(ErrorCode.TokenMalformed, 'Text is not a Tidemark token.');
    }
    const body = this.verifiedBody(text);
    // A bounded split: an oversized body (with a raised maxLength) costs no more than a legal one.
    // Per cluster: a position pair and a pending pair at most.
    const fieldLimit = 2 + 4 * this.maxClusters;
    const fields = body.split(FIELD, fieldLimit + 1);
    if (fields.length > fieldLimit) {
      throw new TokenError(
        ErrorCode.TokenTooLarge,
        `Token names more than the limit of ${this.maxClusters} clusters.`,
      );
    }
    if (fields.length < 2 || fields.length % 2 !== 0) {
      throw new TokenError(ErrorCode.TokenMalformed, 'Token has a wrong number of fields.');
    }
    const issuedAtText = fields[1] as string;
    if (!BASE36.test(issuedAtText)) {
      throw new TokenError(ErrorCode.TokenMalformed, 'Token issue time is not valid.');
    }
    const issuedAt = Number.parseInt(issuedAtText, 36);
    this.checkAge(issuedAt);
    // Maps, not objects, while parsing: a cluster may be named `__proto__`, and a Map is also
    // several times cheaper here than a null-prototype object in dictionary mode.
    const positions = new Map<string, string>();
    let pending: Map<string, string[]> | undefined;
    for (let i = 2; i < fields.length; i += 2) {
      const key = fields[i] as string;
      const value = fields[i + 1] as string;
      if (key.startsWith(PENDING_MARK)) {
        const cluster = key.slice(PENDING_MARK.length);
        pending ??= new Map();
        if (!CLUSTER_NAME.test(cluster) || pending.has(cluster)) {
          throw new TokenError(ErrorCode.TokenMalformed, 'Token has an invalid pending entry.');
        }
        pending.set(cluster, pendingNodes(value));
      } else {
        if (!CLUSTER_NAME.test(key) || !POSITION_TEXT_PATTERN.test(value)) {
          throw new TokenError(ErrorCode.TokenMalformed, 'Token has an invalid cluster entry.');
        }
        if (positions.has(key)) {
          throw new TokenError(ErrorCode.TokenMalformed, `Token names cluster "${key}" twice.`);
        }
        positions.set(key, value);
      }
      if (namedClusters(positions, pending) > this.maxClusters) {
        throw new TokenError(
          ErrorCode.TokenTooLarge,
          `Token names more than the limit of ${this.maxClusters} clusters.`,
        );
      }
    }
    // Object.fromEntries defines own properties, so a `__proto__` cluster stays a cluster.
    const decoded: TokenData = { positions: Object.fromEntries(positions), issuedAt };
    return pending === undefined ? decoded : { ...decoded, pending: Object.fromEntries(pending) };
  }

  private verifiedBody(text: string): string {
    const split = text.indexOf(SIGNATURE_SEPARATOR);
    if (split === -1) {
      if (this.requireSignature) {
        throw new TokenError(
          ErrorCode.TokenUnsigned,
          'Token is not signed but this router requires signed tokens.',
        );
      }
      return text;
    }
    const body = text.slice(0, split);
    const trailer = text.slice(split + SIGNATURE_SEPARATOR.length).split(FIELD, 3);
    if (trailer.length !== 2 || !KEY_ID.test(trailer[0] as string)) {
      throw new TokenError(ErrorCode.TokenMalformed, 'Token signature block is malformed.');
    }
    const key = this.keys.find((k) => k.id === trailer[0]);
    if (!key) {
      // Without keys there is nothing to verify against: a signed token is still malformed for
      // us only if we require signatures; otherwise it cannot be trusted either way.
      throw new TokenError(
        ErrorCode.TokenSignature,
        `Token is signed with key "${trailer[0]}", which this router does not know. Keep retired keys in the keys list until their tokens expire.`,
      );
    }
    const expected = Buffer.from(sign(key.secret, body));
    const actual = Buffer.from(trailer[1] as string);
    if (expected.length !== actual.length || !timingSafeEqual(expected, actual)) {
      throw new TokenError(
        ErrorCode.TokenSignature,
        'Token signature does not match: the token was altered or forged.',
      );
    }
    return body;
  }

  private checkAge(issuedAt: number): void {
    const nowSeconds = Math.floor(this.now() / 1000);
    if (issuedAt > nowSeconds + FUTURE_SKEW_SECONDS) {
      throw new TokenError(ErrorCode.TokenMalformed, 'Token claims to be issued in the future.');
    }
    if (this.maxAgeSeconds !== undefined && nowSeconds - issuedAt > this.maxAgeSeconds) {
      throw new TokenError(
        ErrorCode.TokenExpired,
        `Token is older than ${this.maxAgeSeconds} s; treat the session as new.`,
      );
    }
  }
}

/** The node ids of one pending field: distinct, valid, at most {@link MAX_PENDING_NODES}. */
/** Distinct clusters a token names so far: with a position, pending reads, or both. */
function namedClusters(
  positions: ReadonlyMap<string, string>,
  pending: ReadonlyMap<string, string[]> | undefined,
): number {
  if (pending === undefined) return positions.size;
  let count = positions.size;
  for (const cluster of pending.keys()) if (!positions.has(cluster)) count++;
  return count;
}

function pendingNodes(value: string): string[] {
  const nodes = value.split('.', MAX_PENDING_NODES + 1);
  if (nodes.length > MAX_PENDING_NODES) {
    throw new TokenError(
      ErrorCode.TokenTooLarge,
      `Token carries more than ${MAX_PENDING_NODES} pending nodes for one cluster.`,
    );
  }
  if (nodes.some((node) => !NODE_ID.test(node)) || new Set(nodes).size !== nodes.length) {
    throw new TokenError(ErrorCode.TokenMalformed, 'Token has an invalid pending entry.');
  }
  return nodes;
}

function sign(secret: Buffer, body: string): string {
  return createHmac('sha256', secret).update(body).digest('base64url');
}

function validateKey(key: SigningKey): { id: string; secret: Buffer } {
  if (!KEY_ID.test(key.id)) {
    throw new ConfigError(
      `Signing key id ${JSON.stringify(key.id)} must match [A-Za-z0-9_-]{1,16}.`,
    );
  }
  const secret = typeof key.secret === 'string' ? Buffer.from(key.secret) : Buffer.from(key.secret);
  if (secret.length < MIN_SECRET_BYTES) {
    throw new ConfigError(
      `Signing key "${key.id}" is ${secret.length} bytes; use at least ${MIN_SECRET_BYTES} random bytes.`,
    );
  }
  return { id: key.id, secret };
}

function positiveInteger(name: string, value: number): number {
  if (!Number.isInteger(value) || value <= 0) {
    throw new ConfigError(`${name} must be a positive integer, got ${String(value)}.`);
  }
  return value;
}
