import { describe, expect, it } from 'vitest';
import { isRetryablePgError } from '../../src/retryable.js';

function pgError(code: string, message = 'error'): Error {
  return Object.assign(new Error(message), { code });
}

describe('isRetryablePgError', () => {
  it.each([
    ['ECONNREFUSED', pgError('ECONNREFUSED')],
    ['ECONNRESET', pgError('ECONNRESET')],
    ['57P01 admin_shutdown', pgError('57P01')],
    ['57P02 crash_shutdown', pgError('57P02')],
    ['57P03 cannot_connect_now', pgError('57P03')],
    ['08006 connection_failure', pgError('08006')],
    ['08P01 protocol_violation', pgError('08P01')],
    ['40001 recovery conflict', pgError('40001')],
    ['53300 too_many_connections', pgError('53300')],
    ['terminated unexpectedly', new Error('Connection terminated unexpectedly')],
    ['pool connect timeout', new Error('timeout exceeded when trying to connect')],
    ['aggregate', new AggregateError([pgError('ECONNREFUSED'), pgError('ECONNREFUSED')], 'x')],
    ['wrapped', new Error('outer', { cause: pgError('57P01') })],
  ])('retries %s', (_name, error) => {
    expect(isRetryablePgError(error)).toBe(true);
  });

  it.each([
    ['25006 read_only_sql_transaction', pgError('25006')],
    ['42601 syntax_error', pgError('42601')],
    ['42P01 undefined_table', pgError('42P01')],
    ['23505 unique_violation', pgError('23505')],
    ['57014 query_canceled', pgError('57014')],
    [
      'a SQLSTATE whose message mentions a lost connection',
      pgError('42000', 'connection terminated'),
    ],
    ['TypeError', new TypeError('x is not a function')],
    ['string', 'ECONNREFUSED'],
    ['null', null],
  ])('does not retry %s', (_name, error) => {
    expect(isRetryablePgError(error)).toBe(false);
  });
});
