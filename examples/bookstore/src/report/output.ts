import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, isAbsolute, resolve } from 'node:path';

/** The report's file name when `--report` is not given. */
export const DEFAULT_REPORT_FILE = 'tidemark-report.html';

/**
 * Where `--report PATH` writes: a relative path is taken from the directory the user ran the
 * command in. `pnpm demo` runs the script in examples/bookstore, and pnpm passes the caller's
 * directory as INIT_CWD.
 */
export function resolveReportPath(path: string, env: NodeJS.ProcessEnv = process.env): string {
  if (isAbsolute(path)) return path;
  return resolve(env['INIT_CWD'] || process.cwd(), path);
}

/** Write the report (creating its directory); returns the absolute path. */
export async function writeReport(path: string, html: string): Promise<string> {
  const target = resolveReportPath(path);
  await mkdir(dirname(target), { recursive: true });
  await writeFile(target, html, 'utf8');
  return target;
}
