import type pg from 'pg';

/**
 * Startup option that makes every transaction of the session read-only. Sent in the connection
 * startup packet, so it costs no round trip; a write then fails with SQLSTATE 25006
 * (read_only_sql_transaction). It guards against mistakes, not against a caller who runs
 * `SET default_transaction_read_only = off` on purpose.
 */
export const READ_ONLY_OPTION = '-c default_transaction_read_only=on';

export interface PoolConfigOverrides {
  readonly readOnly: boolean;
  /** Used unless the caller's config sets `max` itself. */
  readonly max: number;
  /** Applied only when the caller's config does not set it. */
  readonly connectionTimeoutMillis?: number;
  readonly applicationName?: string;
}

/**
 * Turn a URL or a pool config into the config of one pool. The caller's own settings win, except
 * that the read-only option is always added to whatever `options` they pass (in the config or as
 * the URL's `options` parameter, which node-postgres would otherwise let override ours).
 */
export function buildPoolConfig(
  source: string | pg.PoolConfig,
  overrides: PoolConfigOverrides,
): pg.PoolConfig {
  const base: pg.PoolConfig =
    typeof source === 'string' ? { connectionString: source } : { ...source };
  const config: pg.PoolConfig = { ...base, max: base.max ?? overrides.max };
  if (
    overrides.connectionTimeoutMillis !== undefined &&
    base.connectionTimeoutMillis === undefined
  ) {
    config.connectionTimeoutMillis = overrides.connectionTimeoutMillis;
  }
  if (overrides.applicationName !== undefined && base.application_name === undefined) {
    config.application_name = overrides.applicationName;
  }
  if (!overrides.readOnly) return config;
  const fromUrl = urlOptions(base.connectionString);
  if (fromUrl !== undefined) {
    config.connectionString = fromUrl.withOptions(joinOptions(fromUrl.options, READ_ONLY_OPTION));
  } else {
    config.options = joinOptions(base.options, READ_ONLY_OPTION);
  }
  return config;
}

function joinOptions(existing: string | undefined, extra: string): string {
  return existing && existing.trim() !== '' ? `${existing} ${extra}` : extra;
}

/** The `options` query parameter of a connection URL, and a way to replace it. */
function urlOptions(
  connectionString: string | undefined,
): { options: string; withOptions: (options: string) => string } | undefined {
  if (connectionString === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(connectionString);
  } catch {
    return undefined;
  }
  const options = url.searchParams.get('options');
  if (options === null) return undefined;
  return {
    options,
    withOptions: (next) => {
      url.searchParams.set('options', next);
      return url.toString();
    },
  };
}
