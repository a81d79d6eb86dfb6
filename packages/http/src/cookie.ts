/** Longest Cookie header we look into; browsers cap a cookie at about 4 KiB each. */
const MAX_COOKIE_HEADER = 16_384;

/**
 * The value of the first cookie called `name` in a Cookie header, or undefined. Bounded and
 * forgiving: a malformed header never throws, it just yields no token.
 */
export function readCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  const text = header.length > MAX_COOKIE_HEADER ? header.slice(0, MAX_COOKIE_HEADER) : header;
  for (const part of text.split(';')) {
    const eq = part.indexOf('=');
    if (eq === -1) continue;
    if (part.slice(0, eq).trim() !== name) continue;
    let value = part.slice(eq + 1).trim();
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) {
      value = value.slice(1, -1);
    }
    return value;
  }
  return undefined;
}

export interface CookieAttributes {
  readonly maxAgeSeconds: number;
  readonly secure: boolean;
  readonly path: string;
  readonly sameSite: 'Lax' | 'Strict' | 'None';
  readonly domain?: string | undefined;
}

/**
 * A Set-Cookie value. Token text is URL-unreserved (core guarantees it), so it needs no
 * escaping; HttpOnly always, because scripts never need to read a position token.
 */
export function serializeCookie(name: string, value: string, attributes: CookieAttributes): string {
  const parts = [
    `${name}=${value}`,
    `Max-Age=${Math.max(0, Math.floor(attributes.maxAgeSeconds))}`,
    `Path=${attributes.path}`,
    'HttpOnly',
    `SameSite=${attributes.sameSite}`,
  ];
  if (attributes.domain) parts.push(`Domain=${attributes.domain}`);
  if (attributes.secure) parts.push('Secure');
  return parts.join('; ');
}
