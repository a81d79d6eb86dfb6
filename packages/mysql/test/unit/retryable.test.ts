import { describe, expect, it } from 'vitest';
import { isRetryableMysqlError } from '../../src/index.js';

function driverError(
  fields: { code?: string; errno?: number; fatal?: boolean },
  message = 'error',
) {
  return Object.assign(new Error(message), fields);
}

describe('isRetryableMysqlError', () => {
  it.each([
    ['ECONNREFUSED', driverError({ code: 'ECONNREFUSED', errno: -111 })],
    ['ECONNRESET', driverError({ code: 'ECONNRESET' })],
    ['ETIMEDOUT (connect)', driverError({ code: 'ETIMEDOUT' })],
    ['PROTOCOL_CONNECTION_LOST', driverError({ code: 'PROTOCOL_CONNECTION_LOST', fatal: true })],
    ['1053 ER_SERVER_SHUTDOWN', driverError({ code: 'ER_SERVER_SHUTDOWN', errno: 1053 })],
    ['1040 too many connections', driverError({ code: 'ER_CON_COUNT_ERROR', errno: 1040 })],
    ['2013 lost connection', driverError({ errno: 2013 })],
    ['2006 server gone away', driverError({ errno: 2006 })],
    ['1317 query interrupted', driverError({ code: 'ER_QUERY_INTERRUPTED', errno: 1317 })],
    ['1927 connection killed (MariaDB)', driverError({ errno: 1927 })],
    ['4031 idle disconnect', driverError({ errno: 4031 })],
    ['3032 offline mode', driverError({ errno: 3032 })],
    [
      'closed state',
      driverError({ fatal: true }, "Can't add new command when connection is in closed state"),
    ],
    ['aggregate', new AggregateError([driverError({ code: 'ECONNREFUSED' })], 'x')],
    ['wrapped', new Error('outer', { cause: driverError({ errno: 1053 }) })],
  ])('retries %s', (_name, error) => {
    expect(isRetryableMysqlError(error)).toBe(true);
  });

  it.each([
    ['1792 write in a read-only transaction', driverError({ errno: 1792 })],
    ['1290 super_read_only', driverError({ errno: 1290 })],
    ['1836 read-only mode', driverError({ errno: 1836 })],
    ['1064 syntax error', driverError({ code: 'ER_PARSE_ERROR', errno: 1064 })],
    ['1146 unknown table', driverError({ errno: 1146 })],
    ['1062 duplicate key', driverError({ errno: 1062 })],
    ['1772 malformed GTID set', driverError({ errno: 1772 })],
    ['non-fatal error without a code', driverError({ fatal: false })],
    ['TypeError', new TypeError('x is not a function')],
    ['string', 'ECONNREFUSED'],
    ['null', null],
  ])('does not retry %s', (_name, error) => {
    expect(isRetryableMysqlError(error)).toBe(false);
  });
});
