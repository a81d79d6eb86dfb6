import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseOptions } from '../src/options.js';
import { renderReport } from '../src/report/html.js';
import type { ReportData } from '../src/report/model.js';
import { DEFAULT_REPORT_FILE, resolveReportPath } from '../src/report/output.js';
import { findChromium, screenshot } from './support/browser.js';
import { chartProblems, layoutOf, pageHeight, type ResultLine } from './support/charts.js';
import { syntheticReport } from './support/fixture.js';

// The HTML report, rendered by a real headless Chromium (Debian's `chromium`; .ci/run installs
// it). A missing browser fails these tests with the install command: it is never a skip.

const PACKAGE_DIR = fileURLToPath(new URL('..', import.meta.url));
const WIDTH = 1200;

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'tidemark-report-test-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Assertions every report must pass before it is looked at. */
function expectSelfContained(html: string): void {
  expect(html.startsWith('<!doctype html>')).toBe(true);
  // Nothing to fetch: no URLs, no links, no stylesheets or images from elsewhere.
  expect(html).not.toMatch(/https?:\/\/|\bsrc\s*=|\bhref\s*=|<link\b|@import|url\(/i);
  // One script element, and it is inert data (the layout), not code.
  const scripts = html.match(/<script\b[^>]*>/g) ?? [];
  expect(scripts).toEqual(['<script type="application/json" id="tidemark-report-layout">']);
  expect(html).toContain('<svg id="chart-outcomes"');
  expect(html).toContain('<svg id="chart-latency"');
  expect(html).toContain('<svg id="chart-timeline"');
}

async function shoot(name: string, html: string) {
  const path = join(dir, `${name}.html`);
  await writeFile(path, html);
  const layout = layoutOf(html);
  const png = await screenshot(path, WIDTH, pageHeight(layout));
  return { png, layout };
}

function linesOf(data: ReportData): ResultLine[] {
  return data.runs.map((run) => ({ ...run.result, ...run.result.shadow }));
}

describe('the HTML report in headless Chromium (synthetic runs, no database)', () => {
  it('finds Chromium, or fails with the command that installs it', () => {
    const saved = process.env['TIDEMARK_CHROMIUM'];
    process.env['TIDEMARK_CHROMIUM'] = '/nonexistent/chromium';
    try {
      expect(() => findChromium()).toThrow('apt-get install -y chromium');
    } finally {
      if (saved === undefined) delete process.env['TIDEMARK_CHROMIUM'];
      else process.env['TIDEMARK_CHROMIUM'] = saved;
    }
    expect(findChromium()).toMatch(/chromium$/);
  });

  it('is one self-contained file', () => {
    expectSelfContained(renderReport(syntheticReport()));
  });

  it('draws every chart: bars as long as their shares, a latency line per strategy, lag and reads by outcome, shadow predictions', async () => {
    const data = syntheticReport();
    const { png, layout } = await shoot('synthetic', renderReport(data));
    expect(png.width).toBe(WIDTH);
    expect(layout.map((chart) => chart.id)).toEqual(['outcomes', 'latency', 'timeline', 'shadow']);
    expect(chartProblems(png, layout, linesOf(data))).toEqual([]);
  });

  it('the check fails for every chart when the charts lose their data (the control)', async () => {
    const data = syntheticReport();
    // The same runs drawn without samples and with zeroed counts: what a report whose data
    // went missing would show. The expectations still come from the real result lines.
    const broken: ReportData = {
      ...data,
      runs: data.runs.map((run) => ({
        reads: [],
        replica: [],
        result: {
          ...run.result,
          primary_reads: 0,
          missing_in_list: 0,
          missing_after_write: 0,
          ...(run.result.shadow
            ? {
                shadow: {
                  ...run.result.shadow,
                  predicted_replica_reads: 0,
                  predicted_primary_reads: 0,
                  predicted_waits: 0,
                  predicted_naive_missing: 0,
                  predicted_naive_missing_after_write: 0,
                },
              }
            : {}),
        },
      })),
    };
    const { png, layout } = await shoot('broken', renderReport(broken));
    const problems = chartProblems(png, layout, linesOf(data));
    for (const chart of ['outcomes', 'latency', 'timeline', 'shadow']) {
      expect(
        problems.some((p) => p.startsWith(`${chart}:`)),
        `${chart} in ${problems.join('\n')}`,
      ).toBe(true);
    }
  });
});

describe('--report / --no-report options', () => {
  it('writes ./tidemark-report.html by default, relative to where the command ran', () => {
    expect(parseOptions([]).report).toBe(DEFAULT_REPORT_FILE);
    expect(parseOptions(['--report', 'out/r.html']).report).toBe('out/r.html');
    expect(parseOptions(['--no-report']).report).toBeUndefined();
    expect(() => parseOptions(['--report', 'a.html', '--no-report'])).toThrow('exclude each other');
    expect(resolveReportPath('r.html', { INIT_CWD: '/home/ada/tidemark' })).toBe(
      '/home/ada/tidemark/r.html',
    );
    expect(resolveReportPath('/tmp/r.html', { INIT_CWD: '/home/ada' })).toBe('/tmp/r.html');
  });
});

function runCli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', 'src/main.ts', ...args],
      { cwd: PACKAGE_DIR, timeout: 110_000, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        resolve({ code, stdout, stderr });
      },
    );
  });
}

describe('pnpm demo --json --report (small run on embedded PostgreSQL 18)', () => {
  let cli: Awaited<ReturnType<typeof runCli>>;
  let path: string;
  let lines: ResultLine[];

  beforeAll(async () => {
    path = join(dir, 'nested', 'demo.html');
    cli = await runCli(['--json', '--orders', '60', '--paused-orders', '40', '--report', path]);
    if (cli.code !== 0) throw new Error(`demo exited with ${cli.code}; stderr:\n${cli.stderr}`);
    lines = cli.stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as ResultLine);
  }, 115_000);

  it('keeps stdout to the JSON lines; the report path goes to stderr', () => {
    expect(lines).toHaveLength(10);
    expect(cli.stdout).not.toContain('report');
    expect(cli.stderr).toContain(`report: ${path}\n`);
    expect(existsSync(path)).toBe(true);
  });

  it("draws the run's numbers in every chart", async () => {
    const html = await readFile(path, 'utf8');
    expectSelfContained(html);
    const layout = layoutOf(html);
    const png = await screenshot(path, WIDTH, pageHeight(layout));
    expect(chartProblems(png, layout, lines)).toEqual([]);
  });
});

describe('pnpm demo (human output) --report', () => {
  it('prints the report path as the last stdout line, after the summary', async () => {
    const path = join(dir, 'human.html');
    const cli = await runCli([
      '--scenario',
      'paused',
      '--strategy',
      'naive,tidemark',
      '--paused-orders',
      '10',
      '--report',
      path,
    ]);
    expect(cli.code, cli.stderr).toBe(0);
    const out = cli.stdout.trimEnd().split('\n');
    expect(out.at(-1)).toBe(`report: ${path}`);
    expect(out.findIndex((l) => l.startsWith('scenario  strategy'))).toBeGreaterThan(0);
    expect(existsSync(path)).toBe(true);
  });
});
