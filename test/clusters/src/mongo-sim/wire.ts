// MongoDB wire protocol framing, just enough for the official driver: OP_QUERY (the legacy
// handshake) answered with OP_REPLY, and OP_MSG with a kind-0 body and kind-1 document sequences.

import type { SimulatorBson } from './bson.js';

export const OP_REPLY = 1;
export const OP_QUERY = 2004;
export const OP_MSG = 2013;

const HEADER_BYTES = 16;
const CHECKSUM_PRESENT = 1;
const MORE_TO_COME = 2;

/** One decoded request: the command document with kind-1 sequences folded in as arrays. */
export interface WireRequest {
  readonly requestId: number;
  readonly opCode: typeof OP_QUERY | typeof OP_MSG;
  readonly command: Record<string, unknown>;
  /** OP_MSG moreToCome: the client expects no reply (unacknowledged write). */
  readonly noReply: boolean;
}

/** Splits a byte stream into whole messages; keeps the remainder for the next chunk. */
export class MessageFramer {
  private buffer: Buffer = Buffer.alloc(0);

  push(chunk: Buffer): Buffer[] {
    this.buffer = this.buffer.length === 0 ? chunk : Buffer.concat([this.buffer, chunk]);
    const messages: Buffer[] = [];
    while (this.buffer.length >= 4) {
      const length = this.buffer.readInt32LE(0);
      if (this.buffer.length < length) break;
      messages.push(this.buffer.subarray(0, length));
      this.buffer = this.buffer.subarray(length);
    }
    return messages;
  }
}

export function decodeRequest(bson: SimulatorBson, message: Buffer): WireRequest {
  const requestId = message.readInt32LE(4);
  const opCode = message.readInt32LE(12);
  if (opCode === OP_QUERY) return decodeQuery(bson, message, requestId);
  if (opCode === OP_MSG) return decodeMsg(bson, message, requestId);
  throw new Error(`simulator: unsupported opCode ${opCode} (compression is not negotiated)`);
}

function decodeQuery(bson: SimulatorBson, message: Buffer, requestId: number): WireRequest {
  let offset = HEADER_BYTES + 4; // flags
  const nameEnd = message.indexOf(0, offset);
  offset = nameEnd + 1 + 8; // numberToSkip, numberToReturn
  const size = message.readInt32LE(offset);
  const command = bson.deserialize(message.subarray(offset, offset + size));
  return { requestId, opCode: OP_QUERY, command, noReply: false };
}

function decodeMsg(bson: SimulatorBson, message: Buffer, requestId: number): WireRequest {
  const flags = message.readUInt32LE(HEADER_BYTES);
  const end = message.length - (flags & CHECKSUM_PRESENT ? 4 : 0);
  let offset = HEADER_BYTES + 4;
  let command: Record<string, unknown> | undefined;
  const sequences: Record<string, unknown[]> = {};
  while (offset < end) {
    const kind = message.readUInt8(offset);
    offset += 1;
    if (kind === 0) {
      const size = message.readInt32LE(offset);
      command = bson.deserialize(message.subarray(offset, offset + size));
      offset += size;
    } else if (kind === 1) {
      const sectionSize = message.readInt32LE(offset);
      const sectionEnd = offset + sectionSize;
      const nameEnd = message.indexOf(0, offset + 4);
      const identifier = message.toString('utf8', offset + 4, nameEnd);
      let cursor = nameEnd + 1;
      const documents: unknown[] = [];
      while (cursor < sectionEnd) {
        const size = message.readInt32LE(cursor);
        documents.push(bson.deserialize(message.subarray(cursor, cursor + size)));
        cursor += size;
      }
      sequences[identifier] = documents;
      offset = sectionEnd;
    } else {
      throw new Error(`simulator: unknown OP_MSG section kind ${kind}`);
    }
  }
  if (!command) throw new Error('simulator: OP_MSG without a body section');
  return {
    requestId,
    opCode: OP_MSG,
    command: { ...command, ...sequences },
    noReply: (flags & MORE_TO_COME) !== 0,
  };
}

let nextResponseId = 1;

function header(length: number, responseTo: number, opCode: number): Buffer {
  const head = Buffer.alloc(HEADER_BYTES);
  head.writeInt32LE(length, 0);
  head.writeInt32LE(nextResponseId++, 4);
  head.writeInt32LE(responseTo, 8);
  head.writeInt32LE(opCode, 12);
  return head;
}

/** Reply in the form the request came in: OP_REPLY for OP_QUERY, OP_MSG for OP_MSG. */
export function encodeReply(
  bson: SimulatorBson,
  request: WireRequest,
  reply: Record<string, unknown>,
): Buffer {
  const document = Buffer.from(bson.serialize(reply));
  if (request.opCode === OP_QUERY) {
    const body = Buffer.alloc(20);
    body.writeInt32LE(0, 0); // responseFlags
    body.writeBigInt64LE(0n, 4); // cursorID
    body.writeInt32LE(0, 12); // startingFrom
    body.writeInt32LE(1, 16); // numberReturned
    const length = HEADER_BYTES + body.length + document.length;
    return Buffer.concat([header(length, request.requestId, OP_REPLY), body, document]);
  }
  const flags = Buffer.alloc(5); // flagBits 0, then section kind 0
  const length = HEADER_BYTES + flags.length + document.length;
  return Buffer.concat([header(length, request.requestId, OP_MSG), flags, document]);
}
