/**
 * Whether a parsed JSON value nests objects and arrays no deeper than `maxDepth`, checked
 * without recursion, so it is safe on any value before something recursive (JSON.stringify)
 * touches it. `JSON.parse` itself does not recurse on the stack in V8; `JSON.stringify` does.
 */
export function withinDepth(value: unknown, maxDepth: number): boolean {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [node, depth] = stack.pop()!;
    if (node === null || typeof node !== 'object') continue;
    if (depth >= maxDepth) return false;
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return true;
}
