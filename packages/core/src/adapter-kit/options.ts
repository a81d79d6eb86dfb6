import { PRIMARY } from '../adapter.js';
import { ConfigError } from '../errors.js';

/** Connections per read or write pool unless the caller says otherwise. */
export const DEFAULT_POOL_SIZE = 10;
/** Probes and waits use small separate pools so that busy read pools never delay them. */
export const MONITOR_POOL_SIZE = 2;
/** How long a monitor connection may take to open before the probe counts as failed. */
export const MONITOR_CONNECT_TIMEOUT_MS = 2000;

/**
 * @throws ConfigError with `message` unless `options` is an object. Adapters call it first, so
 * a missing options argument fails with a sentence, not a TypeError on the first field.
 */
export function requireOptionsObject(options: unknown, message: string): asserts options is object {
  if (options === null || typeof options !== 'object') throw new ConfigError(message);
}

/**
 * Check the replica map: an object whose ids are non-empty and not the reserved `primary`, each
 * source accepted by `checkSource` (which throws a ConfigError naming what it expected).
 *
 * @param what the expected value, in the error for a missing map (`URLs or pool configs`).
 */
export function validateReplicas<S>(
  replicas: unknown,
  what: string,
  checkSource: (name: string, source: unknown) => asserts source is S,
): asserts replicas is Record<string, S> {
  if (replicas === null || typeof replicas !== 'object') {
    throw new ConfigError(`replicas must be an object mapping replica ids to ${what}.`);
  }
  for (const [id, source] of Object.entries(replicas)) {
    if (id === PRIMARY || id.trim() === '') {
      throw new ConfigError(`Replica id ${JSON.stringify(id)} is reserved or empty; rename it.`);
    }
    checkSource(`Replica "${id}"`, source);
  }
}

/**
 * A source check for drivers that take a URL string or an options object.
 *
 * @param what the expected value, for example `a connection URL or a node-postgres pool config`.
 */
export function urlOrObject(
  what: string,
): (name: string, source: unknown) => asserts source is string | object {
  return (name, source) => {
    if (typeof source === 'string') return;
    if (source === null || typeof source !== 'object') {
      throw new ConfigError(`${name} must be ${what}.`);
    }
  };
}

/** `poolSize`, defaulted; @throws ConfigError unless it is a positive integer. */
export function validatePoolSize(poolSize: unknown): number {
  const size = poolSize ?? DEFAULT_POOL_SIZE;
  if (typeof size !== 'number' || !Number.isInteger(size) || size < 1) {
    throw new ConfigError(`poolSize must be a positive integer, got ${String(poolSize)}.`);
  }
  return size;
}

/**
 * @throws ConfigError unless `value` is one of `allowed` (or undefined, when not `required`).
 */
export function validateOneOf<T extends string>(
  name: string,
  value: unknown,
  allowed: readonly T[],
  required = false,
): asserts value is T | undefined {
  if ((required || value !== undefined) && !(allowed as readonly unknown[]).includes(value)) {
    throw new ConfigError(
      `${name} must be ${allowed.map((v) => `'${v}'`).join(' or ')}, got ${JSON.stringify(value)}.`,
    );
  }
}

/** @throws ConfigError unless `value` is undefined or a finite number >= 0. */
export function validateNonNegative(
  name: string,
  value: unknown,
): asserts value is number | undefined {
  if (value !== undefined && (typeof value !== 'number' || !Number.isFinite(value) || value < 0)) {
    throw new ConfigError(`${name} must be a finite number >= 0, got ${String(value)}.`);
  }
}

/** @throws ConfigError unless `value` is undefined or a non-empty string. */
export function validateNonEmptyString(
  name: string,
  value: unknown,
  required = false,
): asserts value is string | undefined {
  if (value === undefined && !required) return;
  if (typeof value !== 'string' || value.trim() === '') {
    throw new ConfigError(`${name} must be a non-empty string, got ${JSON.stringify(value)}.`);
  }
}
