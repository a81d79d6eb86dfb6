import { describe, expect, it } from 'vitest';
import { buildPoolConfig, READ_ONLY_OPTION } from '../../src/pool-config.js';

describe('buildPoolConfig', () => {
  it('adds the read-only startup option to a URL', () => {
    const config = buildPoolConfig('postgres://u@h:5/db', { readOnly: true, max: 7 });
    expect(config).toEqual({
      connectionString: 'postgres://u@h:5/db',
      max: 7,
      options: READ_ONLY_OPTION,
    });
  });

  it("joins a URL's own options parameter, which node-postgres would let win over ours", () => {
    const config = buildPoolConfig('postgres://u@h:5/db?options=-c%20statement_timeout%3D5', {
      readOnly: true,
      max: 7,
    });
    expect(config.options).toBeUndefined();
    const url = new URL(config.connectionString!);
    expect(url.searchParams.get('options')).toBe(`-c statement_timeout=5 ${READ_ONLY_OPTION}`);
  });

  it('joins the options of a pool config and keeps its own max', () => {
    const config = buildPoolConfig(
      { host: 'h', options: '-c search_path=app', max: 3 },
      { readOnly: true, max: 7, connectionTimeoutMillis: 2000 },
    );
    expect(config).toEqual({
      host: 'h',
      options: `-c search_path=app ${READ_ONLY_OPTION}`,
      max: 3,
      connectionTimeoutMillis: 2000,
    });
  });

  it('leaves write pools alone', () => {
    const source = { host: 'h', options: '-c x=y' };
    expect(buildPoolConfig(source, { readOnly: false, max: 10 })).toEqual({ ...source, max: 10 });
    expect(source).toEqual({ host: 'h', options: '-c x=y' });
  });

  it("respects the caller's connection timeout and application name", () => {
    const config = buildPoolConfig(
      { connectionTimeoutMillis: 50, application_name: 'shop' },
      {
        readOnly: false,
        max: 2,
        connectionTimeoutMillis: 2000,
        applicationName: 'tidemark-monitor',
      },
    );
    expect(config.connectionTimeoutMillis).toBe(50);
    expect(config.application_name).toBe('shop');
  });
});
