/**
 * Strip the whitespace MySQL prints between elements (`,\n`) and its common variants (space, tab,
 * CR, LF) from both ends. A loop rather than a regular expression: it runs once per element.
 */
export function trimLayout(text: string): string {
  let start = 0;
  let end = text.length;
  while (start < end && isLayout(text.charCodeAt(start))) start++;
  while (end > start && isLayout(text.charCodeAt(end - 1))) end--;
  return start === 0 && end === text.length ? text : text.slice(start, end);
}

function isLayout(code: number): boolean {
  return code === 32 || code === 9 || code === 10 || code === 13;
}
