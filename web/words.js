// The core's messages in a person's words (issue 36 item 9). The core writes for the CLI and for
// links: `training.global_batch_size: "abc" is a string; expected an integer in [1, 100000000]`.
// The page says it the way a person would: `Global batch size: "abc" is not a number. Enter a
// whole number from 1 to 100,000,000.` The core's path and words stay on screen as the secondary
// detail (a link names the path, the CLI prints the same line). Pure: no DOM, tested in node.

const num = (s) => {
  const v = Number(s);
  // grouped from 10,000 up to where JavaScript writes exponents itself (1e+21): 31 digits read worse than 1e+30
  return Number.isFinite(v) && Math.abs(v) >= 10000 && Math.abs(v) < 1e21 && Number.isInteger(v) ? v.toLocaleString('en-US') : String(s);
};

/** "num_attention_heads" → "attention heads", "inter_node_bw_GBps" → "inter node bw GBps" */
export function keyWords(key) {
  return String(key).replace(/^num_/, '').replace(/_GiB$/, ' (GiB)').replace(/_GBps$/, ' (GB/s)').replace(/_s$/, ' (s)').replace(/_/g, ' ');
}

/** a field's name from its JSON path, when the page has no label for it: "cluster.groups[1].nodes" → "Group 1: nodes" */
export function pathWords(path) {
  const p = String(path ?? '');
  const g = /^cluster\.groups\[(\d+)\](?:\.device)?\.(\w+)$/.exec(p);
  if (g) return `Group ${g[1]}: ${keyWords(g[2])}`;
  const d = /^devices\.([^.]+)\.(\w+)$/.exec(p);
  if (d) return `Custom device ${d[1]}: ${keyWords(d[2])}`;
  const last = /(\w+)(\[\d+\])?$/.exec(p);
  if (!last) return '';
  const w = keyWords(last[1]);
  return w.charAt(0).toUpperCase() + w.slice(1);
}

/** the core's "expected …" in words: "an integer in [1, 100000000]" → "a whole number from 1 to 100,000,000" */
export function expectedWords(exp) {
  let m = /^an integer in \[(-?[\d.e+]+), (-?[\d.e+]+)\]$/.exec(exp);
  if (m) return { words: `a whole number from ${num(m[1])} to ${num(m[2])}`, min: Number(m[1]), max: Number(m[2]), numeric: true };
  m = /^an? (?:finite )?number in \[(-?[\d.e+]+), (-?[\d.e+]+)\]$/.exec(exp);
  if (m) return { words: `a number from ${num(m[1])} to ${num(m[2])}`, min: Number(m[1]), max: Number(m[2]), numeric: true };
  m = /^an? (?:finite )?number > (-?[\d.e+]+) and <= (-?[\d.e+]+)(.*)$/.exec(exp);
  if (m) return { words: `a number above ${num(m[1])} and at most ${num(m[2])}${m[3].replace(/^\s*\(([^)]*)\).*$/, ' ($1)').replace(/^,.*$/, '')}`, min: Number(m[1]), max: Number(m[2]), numeric: true, above: true };
  m = /^an? (?:finite )?number >= (-?[\d.e+]+) and <= (-?[\d.e+]+)$/.exec(exp);
  if (m) return { words: `a number from ${num(m[1])} to ${num(m[2])}`, min: Number(m[1]), max: Number(m[2]), numeric: true };
  m = /^an? (?:finite )?number (>=?) (-?[\d.e+]+)$/.exec(exp);
  if (m) return { words: `a number ${m[1] === '>' ? 'above' : 'of at least'} ${num(m[2])}`, min: Number(m[2]), max: Infinity, numeric: true, above: m[1] === '>' };
  m = /^one of (.*?)(?: \(did you mean "([^"]*)"\?\))?$/.exec(exp);
  if (m) return { words: `one of ${m[1].replace(/"/g, '')}`, suggest: m[2] ?? null, choice: true };
  if (exp === 'true or false') return { words: 'on or off (true or false)' };
  if (exp === 'a string') return { words: 'some text' };
  return { words: exp };
}

/**
 * A problem of the core ({path, message}) as a person reads it; label: the field's name on the
 * page (its label), else one made from the path; null: no name (the message sits next to its
 * field). Returns the sentence; a message it does not know is kept, its snake_case keys in words.
 */
export function inWords(problem, label = '') {
  if (label === null) {
    return inWords(problem, '\u0000').replace(/^\u0000: /, '').replace(/^\u0000 /, 'This field ');
  }
  const msg = String(problem?.message ?? '');
  const raw = label || pathWords(problem?.path) || 'This value';
  const name = raw.charAt(0).toUpperCase() + raw.slice(1);
  const m = /^(.*?)\s*(is a string|is a boolean|is an array|is an object|is not an integer|is out of range|is beyond 2\^53|is not allowed|is null|is missing|is empty|is not a number)(?:; expected (.+))?$/s.exec(msg);
  if (!m) return `${name}: ${msg.replace(/\b[a-z]+(?:_[a-z0-9]+)+\b/g, (k) => keyWords(k))}`;
  const [, value, what, expRaw] = m;
  const exp = expRaw ? expectedWords(expRaw.trim()) : null;
  const shown = value.trim();
  let said;
  switch (what) {
    case 'is a string': said = exp?.numeric ? `${shown} is not a number` : `${shown} is text`; break;
    case 'is a boolean': said = `${shown} is a yes/no value`; break;
    case 'is an array': case 'is an object': said = `${shown || 'the value'} ${what}`; break;
    case 'is not an integer': said = `${shown} is not a whole number`; break;
    case 'is beyond 2^53': said = `${num(shown)} is too large`; break;
    case 'is out of range': {
      const v = Number(shown);
      said = exp && Number.isFinite(v) && (v < exp.min || (exp.above && v === exp.min)) ? `${num(shown)} is too small` : exp && Number.isFinite(v) && v > exp.max ? `${num(shown)} is too large` : `${num(shown)} is out of range`;
      break;
    }
    // (a list of choices; else the rule the message states, such as a range of ints or a list of flags)
    case 'is not allowed': said = exp?.choice ? `${shown} is not one of the choices` : `${shown} is not allowed`; break;
    case 'is null': case 'is missing': case 'is empty': said = 'is empty'; break;
    default: said = `${shown} ${what}`;
  }
  const text = said.startsWith('is ') ? `${name} ${said}` : `${name}: ${said}`;
  const enter = exp ? ` ${exp.choice ? 'Choose' : 'Enter'} ${exp.words}.` : '.';
  const suggest = exp?.suggest ? ` Did you mean ${exp.suggest}?` : '';
  return `${text}.${enter === '.' ? '' : enter}${suggest}`;
}

/**
 * The core's own line, shown in brackets after the words (`words`: what inWords made of the
 * problem): its JSON path and message, or only the path where the words already say the message
 * (a message inWords does not rephrase would read twice); '' with neither. `path`: the path to
 * name (a problem's path, or its part inside the field next to it).
 */
export function detailText(words, message, path = '') {
  const msg = String(message ?? '').trim();
  const w = String(words ?? '');
  const said = msg.replace(/\b[a-z]+(?:_[a-z0-9]+)+\b/g, (k) => keyWords(k));
  if (!msg || w.includes(msg) || w.includes(said)) return path || '';
  return path ? `${path}: ${msg}` : msg;
}
