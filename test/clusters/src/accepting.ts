// Start-up polling shared by every server flavour: only "answer one query" differs per driver.

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export interface WaitOptions {
  timeoutMs?: number;
  /** Stop waiting early when the server process is known to be gone. */
  alive?: () => boolean;
  /** Extra context for the error (e.g. the tail of the server log). */
  context?: () => string;
}

/** A URL without its password, for messages. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return '<unparseable url>';
  }
}

/** Poll until `answer(url)` succeeds (the server accepts a connection and answers a query). */
export async function pollUntilAccepting(
  url: string,
  answer: (url: string) => Promise<unknown>,
  options: WaitOptions = {},
): Promise<void> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let lastError = 'no attempt';
  while (Date.now() < deadline) {
    if (options.alive && !options.alive()) {
      throw new Error(
        `server exited during start-up${options.context ? `:\n${options.context()}` : ''}`,
      );
    }
    try {
      await answer(url);
      return;
    } catch (err) {
      lastError = (err as Error).message;
    }
    await sleep(50);
  }
  throw new Error(
    `server at ${redact(url)} did not accept connections in time (last error: ${lastError})` +
      (options.context ? `\n${options.context()}` : ''),
  );
}
