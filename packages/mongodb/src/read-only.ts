// MongoDB has no read-only session or transaction, so reads the router routes (to a secondary or,
// as a capped fallback, to the primary) get a connection whose write helpers refuse to run. A
// write that looks like a read then fails in development, on every target alike (invariant 7),
// instead of succeeding on the primary and failing only when a secondary serves it.

import { TidemarkError } from '@tidemark/core';
import type { Collection, Db, Document, MongoClient } from 'mongodb';
import { MongoErrorCode } from './errors.js';

/** Collection methods that write or change the schema. */
const WRITE_METHODS = new Set([
  'insertOne',
  'insertMany',
  'updateOne',
  'updateMany',
  'replaceOne',
  'deleteOne',
  'deleteMany',
  'findOneAndUpdate',
  'findOneAndReplace',
  'findOneAndDelete',
  'bulkWrite',
  'initializeOrderedBulkOp',
  'initializeUnorderedBulkOp',
  'createIndex',
  'createIndexes',
  'dropIndex',
  'dropIndexes',
  'createSearchIndex',
  'createSearchIndexes',
  'dropSearchIndex',
  'updateSearchIndex',
  'drop',
  'rename',
]);

/** Db methods that write or change the schema. */
const DB_WRITE_METHODS = new Set([
  'createCollection',
  'dropCollection',
  'dropDatabase',
  'renameCollection',
  'createIndex',
]);

/** Commands (first key of `db.command`) that write or change the schema. */
const WRITE_COMMANDS = new Set([
  'insert',
  'update',
  'delete',
  'findAndModify',
  'findandmodify',
  'create',
  'drop',
  'dropDatabase',
  'createIndexes',
  'dropIndexes',
  'renameCollection',
  'collMod',
  'bulkWrite',
]);

/** A read callback tried to write. Not retryable: the callback is wrong, not the member. */
export class WriteInReadError extends TidemarkError {
  constructor(operation: string) {
    super(
      MongoErrorCode.WriteInRead,
      `${operation} was called inside router.read(). Reads run read-only on every member, the primary included; move the write into router.write() so its position is captured.`,
    );
  }
}

function refuse(operation: string): () => Promise<never> {
  return () => Promise.reject(new WriteInReadError(operation));
}

/** Forward every property to `target`, binding methods so the driver's `this` stays intact. */
function forwarded<T extends object>(target: T, property: string | symbol): unknown {
  const value: unknown = Reflect.get(target, property, target);
  return typeof value === 'function' ? value.bind(target) : value;
}

export function readOnlyCollection<T extends Document>(collection: Collection<T>): Collection<T> {
  return new Proxy(collection, {
    get(target, property) {
      if (typeof property === 'string' && WRITE_METHODS.has(property)) {
        return refuse(`collection.${property}()`);
      }
      return forwarded(target, property);
    },
  });
}

export function readOnlyDb(db: Db): Db {
  return new Proxy(db, {
    get(target, property) {
      if (property === 'collection') {
        return (...args: Parameters<Db['collection']>) =>
          readOnlyCollection(target.collection(...args));
      }
      if (property === 'command') {
        return (command: Document, ...rest: unknown[]) => {
          const name = Object.keys(command)[0] ?? '';
          if (WRITE_COMMANDS.has(name)) return refuse(`db.command({ ${name} })`)();
          return (target.command as (...args: unknown[]) => unknown)(command, ...rest);
        };
      }
      if (typeof property === 'string' && DB_WRITE_METHODS.has(property)) {
        return refuse(`db.${property}()`);
      }
      return forwarded(target, property);
    },
  });
}

export function readOnlyClient(client: MongoClient): MongoClient {
  return new Proxy(client, {
    get(target, property) {
      if (property === 'db') {
        return (...args: Parameters<MongoClient['db']>) => readOnlyDb(target.db(...args));
      }
      if (property === 'bulkWrite') return refuse('client.bulkWrite()');
      return forwarded(target, property);
    },
  });
}
