// JSON text the page reads (files, pasted profiles and configs, share links) → a value, refusing
// numbers beyond a double. JSON.parse reads 1e309 as Infinity, which JSON.stringify then sends to
// the core as null: the core's message would name null, not the number written, and a share link
// would drop the key. Pure (no DOM), tested in node.

export class NonFiniteNumberError extends Error {
  constructor(path) {
    super(`${path || '(top level)'}: a number too large for a double (it reads as infinity); expected a finite number`);
    this.name = 'NonFiniteNumberError';
    this.path = path;
  }
}

/** the JSON path of the first non-finite number in a parsed value, or null (iterative: deep nesting is fine) */
export function nonFinitePath(value) {
  const todo = [[value, '']];
  while (todo.length) {
    const [v, path] = todo.pop();
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return path;
    } else if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) todo.push([v[i], `${path}[${i}]`]);
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v);
      for (let i = entries.length - 1; i >= 0; i--) todo.push([entries[i][1], path ? `${path}.${entries[i][0]}` : entries[i][0]]);
    }
  }
  return null;
}

/** JSON.parse that throws NonFiniteNumberError (with the value's path) for a number like 1e309; a SyntaxError as JSON.parse does */
export function parseJson(text) {
  const value = JSON.parse(text);
  const bad = nonFinitePath(value);
  if (bad !== null) throw new NonFiniteNumberError(bad);
  return value;
}
