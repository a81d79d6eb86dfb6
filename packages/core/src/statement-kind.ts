/** The SQL flavour of a statement's text: how its strings, identifiers and comments are quoted. */
export type SqlFlavour = 'postgres' | 'mysql';

/**
 * Words that make a statement a write or a lock when they appear outside strings, quoted
 * identifiers and comments: data-modifying common table expressions (`with x as (insert ...)`),
 * `select ... into` (creates a table in PostgreSQL, writes a file or variables in MySQL) and row
 * locks (`for update`, `for no key update`, `for share`, `for key share`, `lock in share mode`).
 */
const WRITE_OR_LOCK_WORDS = new Set(['insert', 'update', 'delete', 'merge', 'into', 'share']);

/**
 * Functions that change state or take locks the primary's writers must see: sequences
 * (`nextval`, `setval`) and advisory locks (`pg_advisory_lock`, `pg_try_advisory_xact_lock`, ...,
 * MySQL `get_lock`). A lock taken on a replica would not exclude anyone on the primary.
 */
function isStatefulFunction(word: string): boolean {
  return (
    word === 'nextval' ||
    word === 'setval' ||
    word === 'get_lock' ||
    word.startsWith('pg_advisory') ||
    word.startsWith('pg_try_advisory')
  );
}

/**
 * Whether the text of a statement an ORM built for a read (Drizzle's `select`, `$count`, relational
 * `query.*`, `with(...).select`) may run on a replica: true unless, outside string literals,
 * quoted identifiers and comments, it contains a data-modifying or locking keyword (a write CTE,
 * `for update` / `for share`, `select ... into`) or calls a sequence or advisory-lock function.
 *
 * Fails toward the primary: a word it cannot rule out (an unterminated string or comment, a
 * keyword inside a raw `sql` fragment) sends the statement to the primary, which can only cost a
 * replica read, never serve a stale one. The text is what the ORM generated (values are bound
 * parameters, identifiers are quoted), so in practice only the SQL keywords themselves match.
 */
export function mayRunOnReplica(sql: string, flavour: SqlFlavour): boolean {
  const length = sql.length;
  let i = 0;
  while (i < length) {
    const c = sql[i] as string;
    if (c === "'") {
      // PostgreSQL: backslash escapes only in E'...' strings; MySQL: always (the default mode).
      const escapes = flavour === 'mysql' || isEscapePrefix(sql, i);
      i = skipQuoted(sql, i, "'", escapes);
    } else if (c === '"') {
      i = skipQuoted(sql, i, '"', flavour === 'mysql');
    } else if (c === '`' && flavour === 'mysql') {
      i = skipQuoted(sql, i, '`', false);
    } else if (c === '-' && sql[i + 1] === '-') {
      i = skipLine(sql, i);
    } else if (c === '#' && flavour === 'mysql') {
      i = skipLine(sql, i);
    } else if (c === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end === -1 ? -1 : end + 2;
    } else if (c === '$' && flavour === 'postgres') {
      i = skipDollarQuoted(sql, i);
    } else if (isWordStart(c)) {
      let end = i + 1;
      while (end < length && isWordPart(sql[end] as string)) end++;
      const word = sql.slice(i, end).toLowerCase();
      if (WRITE_OR_LOCK_WORDS.has(word) || isStatefulFunction(word)) return false;
      i = end;
    } else {
      i++;
    }
    // Unterminated string, identifier or comment: the rest cannot be read, so not provably safe.
    if (i === -1) return false;
  }
  return true;
}

/** PostgreSQL `E'...'` (an escape string constant): the `E` is a word of its own. */
function isEscapePrefix(sql: string, quoteAt: number): boolean {
  const prefix = sql[quoteAt - 1];
  return (prefix === 'e' || prefix === 'E') && !isWordPart(sql[quoteAt - 2] ?? ' ');
}

function isWordStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

function isWordPart(c: string): boolean {
  return isWordStart(c) || (c >= '0' && c <= '9') || c === '$';
}

/** Index after the closing quote (a doubled quote stays inside), or -1 when there is none. */
function skipQuoted(sql: string, start: number, quote: string, backslashEscapes: boolean): number {
  let i = start + 1;
  while (i < sql.length) {
    const c = sql[i];
    if (backslashEscapes && c === '\\') {
      i += 2;
    } else if (c === quote) {
      if (sql[i + 1] === quote) i += 2;
      else return i + 1;
    } else {
      i++;
    }
  }
  return -1;
}

function skipLine(sql: string, start: number): number {
  const end = sql.indexOf('\n', start);
  return end === -1 ? sql.length : end + 1;
}

/**
 * PostgreSQL dollar quoting (`$$...$$`, `$tag$...$tag$`). A `$` not opening one (a bind
 * parameter `$1`) is skipped as one character.
 */
function skipDollarQuoted(sql: string, start: number): number {
  const match = /^\$([A-Za-z_][A-Za-z0-9_]*)?\$/.exec(sql.slice(start, start + 65));
  if (!match) return start + 1;
  const delimiter = match[0];
  const end = sql.indexOf(delimiter, start + delimiter.length);
  return end === -1 ? -1 : end + delimiter.length;
}
