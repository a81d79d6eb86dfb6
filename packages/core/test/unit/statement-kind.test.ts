/** Which statement texts an integration may send to a replica (no database needed). */
import { describe, expect, it } from 'vitest';
import { mayRunOnReplica } from '../../src/index.js';

describe('mayRunOnReplica', () => {
  it('plain selects, as Drizzle builds them, may run on a replica', () => {
    for (const sql of [
      'select "id", "note" from "orders" where "orders"."customer" = $1',
      'select count(*) from "orders" where "orders"."customer" = $1',
      'with "mine" as (select "note" from "orders" where "orders"."customer" = $1) select "note" from "mine"',
      'select distinct on ("orders"."note") "note" from "orders" order by "orders"."note"',
      'select `id`, `note` from `orders` where `orders`.`customer` = ?',
      // Keywords inside strings, quoted identifiers and comments do not count.
      `select "update", 'insert into t' as x, "delete""me" from "for share" -- update\n`,
      "select `update`, 'it''s an update', \"delete\" from t /* insert */ # for update\n",
      'select $$insert$$, $tag$update$tag$, $1 from t',
      "select E'\\' delete' from t",
      // Words that merely contain a keyword.
      'select "updated_at", insertion, deleted, updates from t',
    ]) {
      const flavour = sql.includes('`') || sql.includes('#') ? 'mysql' : 'postgres';
      expect(mayRunOnReplica(sql, flavour), sql).toBe(true);
    }
  });

  it('write CTEs, locking selects, select into and stateful functions go to the primary', () => {
    for (const sql of [
      'with "added" as (insert into "orders" ("customer") values ($1) returning "note") select "note" from "added"',
      'with "gone" as (delete from "orders" returning "id") select count(*) from "gone"',
      'with "changed" as (UPDATE "orders" set "note" = $1 returning "id") select * from "changed"',
      'with "m" as (merge into t using s on t.id = s.id when matched then delete) select 1',
      'select "id" from "orders" where "customer" = $1 for update',
      'select "id" from "orders" for no key update of "orders" skip locked',
      'select "id" from "orders" for share',
      'select "id" from "orders" for key share nowait',
      'select * into "copy" from "orders"',
      "select nextval('orders_id_seq')",
      'select pg_advisory_lock(1)',
      'select pg_try_advisory_xact_lock(1)',
      // Unterminated quoting: the rest cannot be read, so it is not provably a read.
      "select 'open",
      'select "open',
      'select 1 /* open',
      'select $x$ open',
    ]) {
      expect(mayRunOnReplica(sql, 'postgres'), sql).toBe(false);
    }
    for (const sql of [
      'select `id` from `orders` where `customer` = ? for update',
      'select `id` from `orders` lock in share mode',
      'select `id` from `orders` for share skip locked',
      "select get_lock('job', 0)",
      'select `id` into @x from `orders` limit 1',
      // MySQL strings end at an unescaped quote: \\' does not end it.
      "select 'it\\'s' , 1 from t for update",
      "select 'open\\'",
    ]) {
      expect(mayRunOnReplica(sql, 'mysql'), sql).toBe(false);
    }
  });

  it('PostgreSQL strings are standard: a backslash does not escape outside E strings', () => {
    // 'a\' is a complete string in PostgreSQL; the update after it is outside any string.
    expect(mayRunOnReplica("select 'a\\' from t for update", 'postgres')).toBe(false);
    // In MySQL the same text is one unterminated string: not provably a read either.
    expect(mayRunOnReplica("select 'a\\' from t", 'mysql')).toBe(false);
  });
});
