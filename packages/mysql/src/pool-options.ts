import type { PoolOptions } from 'mysql2/promise';

export interface PoolOverrides {
  /** Used unless the caller's options set `connectionLimit`. */
  readonly connectionLimit: number;
  /** Forced on: internal pools send several statements in one round trip. */
  readonly multipleStatements?: boolean;
  /** Applied only when the caller's options do not set it. */
  readonly connectTimeout?: number;
}

/**
 * Turn a URL or mysql2 pool options into the options of one pool. The caller's settings win,
 * except `resetOnRelease`, which is always off: a reset on release (COM_RESET_CONNECTION) would
 * silently undo the per-connection session setup, such as read-only mode on read pools.
 */
export function buildPoolOptions(
  source: string | PoolOptions,
  overrides: PoolOverrides,
): PoolOptions {
  const base: PoolOptions = typeof source === 'string' ? parseConnectionUrl(source) : { ...source };
  const options: PoolOptions = {
    ...base,
    connectionLimit: base.connectionLimit ?? overrides.connectionLimit,
    resetOnRelease: false,
  };
  if (overrides.multipleStatements) options.multipleStatements = true;
  if (overrides.connectTimeout !== undefined && base.connectTimeout === undefined) {
    options.connectTimeout = overrides.connectTimeout;
  }
  return options;
}

/**
 * `mysql://user:password@host:port/database?option=value`, read the way mysql2 reads it (query
 * parameters as JSON where they parse, else as text), but into an object the adapter can then
 * override: mysql2's own `uri` option would let the URL override the adapter's settings.
 */
const UNSAFE_KEYS = new Set(['__proto__', 'constructor', 'prototype']);

export function parseConnectionUrl(text: string): PoolOptions {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new TypeError('not a URL');
  }
  if (url.protocol !== 'mysql:' && url.protocol !== 'mariadb:') {
    throw new TypeError(`protocol ${url.protocol} is not mysql: or mariadb:`);
  }
  const host = decodeURIComponent(url.hostname.replace(/^\[(.*)\]$/, '$1'));
  const options: Record<string, unknown> = { host };
  if (url.port !== '') options['port'] = Number(url.port);
  if (url.username !== '') options['user'] = decodeURIComponent(url.username);
  if (url.password !== '') options['password'] = decodeURIComponent(url.password);
  const database = decodeURIComponent(url.pathname.slice(1));
  if (database !== '') options['database'] = database;
  for (const [key, value] of url.searchParams) {
    if (key in options || UNSAFE_KEYS.has(key)) continue;
    try {
      options[key] = JSON.parse(value);
    } catch {
      options[key] = value;
    }
  }
  return options as PoolOptions;
}
