/**
 * README before/after snippets as tests: the integration packages' READMEs mark their code blocks
 * `<!-- snippet: NAME -->`, and their tests run the blocks as they stand and check that "after"
 * differs from "before" only in imports, setup and comments.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';

/** The code of the ```ts block right after `<!-- snippet: name -->` in the README at `readme`. */
export function readmeSnippet(readme: URL, name: string): string {
  const text = readFileSync(readme, 'utf8');
  const match = new RegExp(`<!-- snippet: ${name} -->\\n\`\`\`ts\\n([\\s\\S]*?)\`\`\``).exec(text);
  if (!match?.[1]) throw new Error(`${readme.pathname} has no snippet '${name}'`);
  return match[1];
}

/**
 * The top-level statements a user keeps when switching: not imports, not comments, and none that
 * `setup` matches (the setup calls the switch replaces), with comment lines dropped.
 */
export function keptLines(code: string, setup: RegExp): string[] {
  // Top-level statements start at column 0 (a closing bracket there ends the one before).
  const statements = code.split(/\n(?=[^\s)\]}])/);
  return statements
    .filter((s) => !s.startsWith('import ') && !s.startsWith('//'))
    .filter((s) => !setup.test(s))
    .map((s) =>
      s
        .split('\n')
        .filter((line) => !line.trim().startsWith('//'))
        .join('\n')
        .trim(),
    )
    .filter((s) => s !== '');
}

/**
 * Write `code` into directory `dir` as module `name`, exporting `exported` too, and import it:
 * the snippet runs as it stands, and the test sees its values.
 */
export async function runSnippet(
  dir: URL,
  name: string,
  code: string,
  exported: string[],
): Promise<Record<string, unknown>> {
  mkdirSync(dir, { recursive: true });
  const file = new URL(`./${name}.ts`, dir);
  writeFileSync(file, `${code}\nexport { ${exported.join(', ')} };\n`);
  return (await import(/* @vite-ignore */ file.href)) as Record<string, unknown>;
}
