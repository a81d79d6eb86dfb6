import { describe, expect, it } from 'vitest';
import { buildPoolOptions, parseConnectionUrl } from '../../src/pool-options.js';

describe('parseConnectionUrl', () => {
  it('reads user, password, host, port, database and options as mysql2 does', () => {
    expect(
      parseConnectionUrl(
        'mysql://app:p%40ss@db.example:3307/shop?connectTimeout=500&ssl=%7B%22rejectUnauthorized%22%3Afalse%7D&charset=utf8mb4',
      ),
    ).toEqual({
      host: 'db.example',
      port: 3307,
      user: 'app',
      password: 'p@ss',
      database: 'shop',
      connectTimeout: 500,
      ssl: { rejectUnauthorized: false },
      charset: 'utf8mb4',
    });
    expect(parseConnectionUrl('mariadb://[::1]/')).toEqual({ host: '::1' });
  });

  it('ignores parameters that would overwrite the URL parts or an object prototype', () => {
    const options = parseConnectionUrl('mysql://u@h:1/d?host=evil&__proto__=%7B%22x%22%3A1%7D');
    expect(options).toEqual({ host: 'h', port: 1, user: 'u', database: 'd' });
    expect(({} as { x?: number }).x).toBeUndefined();
  });

  it.each(['postgres://u@h/d', 'localhost:3306', ''])('refuses %j', (text) => {
    expect(() => parseConnectionUrl(text)).toThrow(TypeError);
  });
});

describe('buildPoolOptions', () => {
  it('keeps the caller settings and fills the pool size', () => {
    expect(buildPoolOptions({ host: 'h', connectionLimit: 3 }, { connectionLimit: 10 })).toEqual({
      host: 'h',
      connectionLimit: 3,
      resetOnRelease: false,
    });
    expect(buildPoolOptions('mysql://u@h:1/d', { connectionLimit: 10 })).toMatchObject({
      connectionLimit: 10,
    });
  });

  it('always turns resetOnRelease off: it would undo the per-connection session setup', () => {
    expect(
      buildPoolOptions({ host: 'h', resetOnRelease: true }, { connectionLimit: 1 }).resetOnRelease,
    ).toBe(false);
    expect(
      buildPoolOptions('mysql://u@h/d?resetOnRelease=true', { connectionLimit: 1 }).resetOnRelease,
    ).toBe(false);
  });

  it('forces multipleStatements for internal pools and keeps a caller connectTimeout', () => {
    const options = buildPoolOptions(
      { host: 'h', multipleStatements: false, connectTimeout: 7000 },
      { connectionLimit: 2, multipleStatements: true, connectTimeout: 2000 },
    );
    expect(options.multipleStatements).toBe(true);
    expect(options.connectTimeout).toBe(7000);
    expect(
      buildPoolOptions({ host: 'h' }, { connectionLimit: 2, connectTimeout: 2000 }).connectTimeout,
    ).toBe(2000);
  });
});
