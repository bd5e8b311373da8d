/**
 * Which regular expressions (`matches` operands, Postgres AREs) Herald refuses to run because
 * their cost cannot be bounded in advance. Postgres compiles bounded repetitions by copying their
 * operand (`(a{1,200}){1,200}b` is 40,000 states: 23 s over 4,000 records) and runs
 * back-references by backtracking (`^(.*)\1\1$`: 5 s over 200 short texts), and every further
 * quantifier multiplies the states a text can keep active (500 × `.*`: 7 s). The rule:
 *
 * - no back-references (`\1` … `\9`);
 * - no repetition of something that itself repeats: `*`, `+`, `{m,}` or `{m,n}` (n ≥ 2) applied
 *   to a group holding one of those (`(a+)+`, `(a{1,9}){1,9}`, `(\w+\s?)*`);
 * - at most REGEX_MAX_QUANTIFIERS quantifiers;
 * - at most REGEX_MAX_SIZE atoms (a character, `.`, a class like `[a-z]` or `\d`) once every
 *   bounded repetition is expanded (`x{m,n}` counts x n times).
 *
 * What passes costs at most a few hundred milliseconds per 4,000 short texts (measured on the
 * development machine); larger tables are the statement timeout's business. The rule is applied
 * to valid patterns only as far as it needs to: what it cannot parse, Postgres judges.
 */

export const REGEX_MAX_QUANTIFIERS = 20;
export const REGEX_MAX_SIZE = 1000;

interface Frame {
  /** Atoms of the group so far, every alternative counted. */
  size: number;
  /** Whether a repeating quantifier occurs in the group. */
  repeats: boolean;
  /** The atom (or closed group) a quantifier would apply to; null after `|`, `(` or `^`. */
  last: { size: number; repeats: boolean } | null;
}

const BOUND = /^\{(\d{1,5})(,(\d{0,5}))?\}/;
const OPTIONS = /^\(\?([a-z]+)\)/;
const HEX = /^[0-9A-Fa-f]*/;

/** Why the pattern's cost cannot be bounded, or null when it can (or Postgres must judge). */
export function regexCostProblem(pattern: string): string | null {
  let i = 0;
  if (pattern.startsWith('***=')) return null; // the rest is a literal string
  if (pattern.startsWith('***:')) i = 4;
  let expanded = false;
  const options = OPTIONS.exec(pattern.slice(i));
  if (options) {
    if (options[1]!.includes('q')) return null; // literal
    expanded = options[1]!.includes('x');
    i += options[0].length;
  }
  const stack: Frame[] = [{ size: 0, repeats: false, last: null }];
  let quantifiers = 0;
  const atom = (frame: Frame, size: number) => {
    frame.size += size;
    frame.last = { size, repeats: false };
  };

  while (i < pattern.length) {
    const frame = stack[stack.length - 1]!;
    const c = pattern[i]!;
    if (expanded && /\s/.test(c)) {
      i++;
      continue;
    }
    if (expanded && c === '#') {
      const end = pattern.indexOf('\n', i);
      i = end === -1 ? pattern.length : end + 1;
      continue;
    }
    switch (c) {
      case '\\': {
        const next = pattern[i + 1];
        if (next === undefined) return null;
        if (/[1-9]/.test(next)) {
          return 'back-references (\\1 … \\9) are not allowed: their cost grows exponentially with the text';
        }
        i += 2;
        if (next === 'x') i += HEX.exec(pattern.slice(i))![0].length;
        else if (next === 'u') i += 4;
        else if (next === 'U') i += 8;
        else if (next === 'c') i += 1;
        else if (next === '0') i += /^[0-7]*/.exec(pattern.slice(i))![0].length;
        // Constraint escapes (\m \M \y \Y \A \Z) match no character but count as atoms: harmless.
        atom(frame, 1);
        continue;
      }
      case '[': {
        const end = bracketEnd(pattern, i);
        if (end === -1) return null;
        i = end + 1;
        atom(frame, 1);
        continue;
      }
      case '(': {
        // (?: (?= (?! (?<= (?<! are groups for this purpose; anything else after (? is Postgres's.
        const lookbehind = pattern.startsWith('(?<', i);
        i += pattern[i + 1] === '?' ? (lookbehind ? 4 : 3) : 1;
        stack.push({ size: 0, repeats: false, last: null });
        continue;
      }
      case ')': {
        if (stack.length === 1) return null;
        stack.pop();
        const parent = stack[stack.length - 1]!;
        parent.size += frame.size;
        parent.repeats ||= frame.repeats;
        parent.last = { size: frame.size, repeats: frame.repeats };
        i++;
        continue;
      }
      case '|':
        frame.last = null;
        i++;
        continue;
      case '^':
      case '$':
        frame.last = null;
        i++;
        continue;
      case '*':
      case '+':
      case '?':
      case '{': {
        let repeating: boolean;
        let times = 1;
        let length = 1;
        if (c === '{') {
          const bound = BOUND.exec(pattern.slice(i));
          if (!bound) {
            atom(frame, 1); // not a bound: a literal brace
            i++;
            continue;
          }
          const min = Number(bound[1]);
          const max = bound[2] === undefined ? min : bound[3] === '' ? Infinity : Number(bound[3]);
          repeating = max >= 2;
          times = Math.max(1, Number.isFinite(max) ? max : min);
          length = bound[0].length;
        } else {
          repeating = c !== '?';
        }
        i += length;
        if (pattern[i] === '?') i++; // non-greedy
        const operand = frame.last;
        if (!operand) return null; // a quantifier without an operand: Postgres refuses it
        if (++quantifiers > REGEX_MAX_QUANTIFIERS) {
          return `at most ${REGEX_MAX_QUANTIFIERS} quantifiers (* + ? {m,n}) are allowed`;
        }
        if (repeating && operand.repeats) {
          return 'a repeated group may not itself contain a repetition (like (a+)+ or (a{1,9}){1,9}): its cost cannot be bounded';
        }
        frame.size += operand.size * (times - 1);
        operand.size *= times;
        operand.repeats ||= repeating;
        frame.repeats ||= repeating;
        if (frame.size > REGEX_MAX_SIZE) return sizeProblem();
        continue;
      }
      default:
        atom(frame, 1);
        i++;
    }
    if (frame.size > REGEX_MAX_SIZE) return sizeProblem();
  }
  if (stack.length !== 1) return null;
  return stack[0]!.size > REGEX_MAX_SIZE ? sizeProblem() : null;
}

function sizeProblem(): string {
  return `the pattern is too large once its bounded repetitions are expanded (at most ${REGEX_MAX_SIZE} characters or classes; x{m,n} counts x n times)`;
}

/** Index of the `]` closing the bracket expression that opens at `start`, or -1. */
function bracketEnd(pattern: string, start: number): number {
  let i = start + 1;
  if (pattern[i] === '^') i++;
  if (pattern[i] === ']') i++; // a leading ] is a literal
  while (i < pattern.length) {
    const c = pattern[i]!;
    if (c === ']') return i;
    if (c === '\\') {
      i += 2;
      continue;
    }
    if (c === '[' && /[:.=]/.test(pattern[i + 1] ?? '')) {
      const close = pattern.indexOf(`${pattern[i + 1]}]`, i + 2);
      if (close === -1) return -1;
      i = close + 2;
      continue;
    }
    i++;
  }
  return -1;
}
