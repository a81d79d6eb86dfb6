import { ConfigError } from '@tidemark/core';

/** Where one node listens: what `server.address` and `server.port` report for it. */
export interface NodeAddress {
  readonly address: string;
  readonly port?: number | undefined;
}

/**
 * A node given as a connection URL (`postgres://user:secret@db1:5432/app`) or as an address.
 * Only host and port are kept from a URL: user names and passwords never reach telemetry.
 */
export type NodeSpec = string | NodeAddress;

/**
 * Resolve the configured nodes (`primary` and replica ids, as the router's decisions name them)
 * to addresses. Bad entries throw at startup rather than leaving spans without a server.
 */
export function resolveNodes(
  nodes: Readonly<Record<string, NodeSpec>> | undefined,
): ReadonlyMap<string, NodeAddress> {
  const resolved = new Map<string, NodeAddress>();
  for (const [id, spec] of Object.entries(nodes ?? {})) {
    resolved.set(id, typeof spec === 'string' ? fromUrl(id, spec) : checked(id, spec));
  }
  return resolved;
}

function fromUrl(id: string, url: string): NodeAddress {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    // The URL itself stays out of the message: it may hold a password.
    throw new ConfigError(
      `nodes.${id} is not a connection URL; pass a URL such as postgres://host:5432/db or { address, port }.`,
    );
  }
  // WHATWG URL keeps the brackets of an IPv6 host; server.address wants the bare address.
  const address = decodeURIComponent(parsed.hostname).replace(/^\[(.*)\]$/, '$1');
  if (address === '') {
    throw new ConfigError(`nodes.${id}: the URL has no host; pass { address, port } instead.`);
  }
  return { address, port: parsed.port === '' ? undefined : Number(parsed.port) };
}

function checked(id: string, node: NodeAddress): NodeAddress {
  if (typeof node?.address !== 'string' || node.address === '') {
    throw new ConfigError(`nodes.${id}.address must be a non-empty string.`);
  }
  if (
    node.port !== undefined &&
    (!Number.isInteger(node.port) || node.port <= 0 || node.port > 65535)
  ) {
    throw new ConfigError(`nodes.${id}.port must be an integer from 1 to 65535.`);
  }
  return { address: node.address, port: node.port };
}
