import { execFile } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { decodePng, type Png } from './png.js';

export const CHROMIUM_INSTALL = 'apt-get install -y chromium';

/**
 * The Chromium binary: TIDEMARK_CHROMIUM, else `chromium` (Debian's package) on PATH. Missing is
 * an error, never a skip: the report's charts are only proven by a real browser.
 */
export function findChromium(): string {
  const configured = process.env['TIDEMARK_CHROMIUM'];
  const candidates = configured
    ? [configured]
    : (process.env['PATH'] ?? '').split(delimiter).map((dir) => join(dir, 'chromium'));
  for (const candidate of candidates) {
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {
      // next
    }
  }
  throw new Error(
    `Chromium not found (${configured ? `TIDEMARK_CHROMIUM=${configured}` : 'no chromium on PATH'}). ` +
      `The report test renders the HTML report in a real headless browser. Install it with \`${CHROMIUM_INSTALL}\` ` +
      '(Debian; .ci/run does this), or point TIDEMARK_CHROMIUM at a Chromium binary.',
  );
}

/**
 * Render `htmlPath` in headless Chromium at `width` x `height` CSS pixels (device scale 1) and
 * return the decoded screenshot.
 */
export async function screenshot(htmlPath: string, width: number, height: number): Promise<Png> {
  const chromium = findChromium();
  const dir = await mkdtemp(join(tmpdir(), 'tidemark-shot-'));
  const png = join(dir, 'shot.png');
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(
        chromium,
        [
          '--headless',
          '--no-sandbox',
          '--disable-gpu',
          '--hide-scrollbars',
          '--force-device-scale-factor=1',
          '--no-first-run',
          `--user-data-dir=${join(dir, 'profile')}`,
          `--window-size=${width},${height}`,
          `--screenshot=${png}`,
          pathToFileURL(htmlPath).href,
        ],
        { timeout: 90_000 },
        (error, _stdout, stderr) => {
          if (error) reject(new Error(`chromium failed: ${error.message}\n${stderr}`));
          else resolve();
        },
      );
    });
    return decodePng(await readFile(png));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
