// The function bodies of a C++ file, for scripts/check-layers.ts's length limits (the addon's engine/native, the
// benchmarks' and tools' own C++). Not a parser: comments, string and character literals and preprocessor lines are
// blanked first, then the braces are matched. A brace that opens at declaration level (the file, a namespace, a
// class or struct body) after a parameter list, `)` with nothing after it but qualifiers, a trailing return type
// or a constructor's initialiser list, is a function body; a namespace, class, struct, union, enum or extern block
// is looked into; any other block there (a braced initialiser, `= [] {…}`) is skipped. Lambdas and local classes
// inside a function count as lines of that function, as the code they are part of. Enough for the code in this
// repository: raw strings and digit separators (1'000) are not read, and layers.test.ts holds the scanner to
// cases of each kind it does read.

export interface CxxFunction {
  name: string;
  /** 1-based line of the signature's first token (a template<…> line included). */
  line: number;
  lines: number;
}

/** The text with comments, literals and preprocessor lines replaced by spaces; newlines (so line numbers) kept. */
export function blankCxx(text: string): string {
  const out = text.split('');
  const blank = (from: number, to: number) => {
    for (let k = from; k < to; k++) if (out[k] !== '\n') out[k] = ' ';
  };
  let i = 0;
  let lineStart = true;
  while (i < text.length) {
    const c = text[i]!;
    const next = text[i + 1];
    if (lineStart && c === '#') {
      // A directive runs to the end of the line, and on past a line that ends in a backslash.
      let j = i;
      while (j < text.length && !(text[j] === '\n' && text[j - 1] !== '\\')) j++;
      blank(i, j);
      i = j;
      continue;
    }
    if (c === '\n') lineStart = true;
    else if (c !== ' ' && c !== '\t') lineStart = false;
    if (c === '/' && next === '/') {
      const j = text.indexOf('\n', i);
      const end = j < 0 ? text.length : j;
      blank(i, end);
      i = end;
    } else if (c === '/' && next === '*') {
      const j = text.indexOf('*/', i + 2);
      const end = j < 0 ? text.length : j + 2;
      blank(i, end);
      i = end;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      while (j < text.length && text[j] !== c && text[j] !== '\n') j += text[j] === '\\' ? 2 : 1;
      // The quotes stay (an initialiser's `= "…"` still reads as one); what is between them goes.
      blank(i + 1, j);
      i = j + 1;
    } else i++;
  }
  return out.join('');
}

const CONTAINER =
  /^(?:template\s*<[^{]*>\s*)?(?:namespace\b|extern\b|(?:class|struct|union)\b(?![^(]*\)\s*$))/;
const ENUM = /^(?:typedef\s+)?enum\b/;
/** `)` then only qualifiers or a trailing return type; or `)` then a constructor's initialiser list. */
const SIGNATURE =
  /\)\s*(?:(?:const|volatile|override|final|noexcept|mutable|&|&&)\s*(?:\([^()]*\)\s*)?)*(?:->\s*[\w:<>,*&\s]+)?$/;
const INITIALISER_LIST = /\)\s*(?:const\s*)?(?:noexcept\s*)?:\s*[\w:<>]+\s*[({][\s\S]*[)}]$/;
/** Inside a constructor's initialiser list, at a member's name: the brace that follows initialises it. */
const CTOR_MEMBER_INIT = /\)\s*(?:const\s*)?(?:noexcept\s*)?:(?!:)[\s\S]*[\w>]$/;
const NAME = /((?:[\w~]+(?:<[^<>()]*>)?::)*(?:operator\s*(?:\(\)|[^\s(]+)|~?\w+))\s*\(/;

/** The head of a block with every parenthesised group emptied: `=` left in it means an initialiser. */
function outsideParens(head: string): string {
  let depth = 0;
  let out = '';
  for (const c of head.replace(/operator\s*[^\s(]+/g, 'operator')) {
    if (c === '(') depth++;
    if (depth === 0) out += c;
    if (c === ')') depth = Math.max(0, depth - 1);
  }
  return out;
}

export function cxxFunctions(text: string): CxxFunction[] {
  const code = blankCxx(text);
  const out: CxxFunction[] = [];
  let line = 1;
  // Declaration-level scopes (file, namespace, class) by brace depth; a function body or skipped block is walked
  // through at once below, so the stack only holds containers.
  let headStart = 0;
  let i = 0;
  const lineAt = (() => {
    const starts = [0];
    for (let k = 0; k < code.length; k++) if (code[k] === '\n') starts.push(k + 1);
    return (pos: number) => {
      let lo = 0;
      let hi = starts.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (starts[mid]! <= pos) lo = mid;
        else hi = mid - 1;
      }
      return lo + 1;
    };
  })();
  /** From the `{` at `open`, the index just past its matching `}`. */
  const skipBlock = (open: number): number => {
    let depth = 0;
    for (let k = open; k < code.length; k++) {
      if (code[k] === '{') depth++;
      else if (code[k] === '}' && --depth === 0) return k + 1;
    }
    return code.length;
  };
  while (i < code.length) {
    const c = code[i]!;
    if (c === ';' || c === '}') {
      headStart = i + 1;
      i++;
      continue;
    }
    if (c === ':' && /\b(?:public|private|protected)\s*$/.test(code.slice(headStart, i))) {
      headStart = i + 1;
      i++;
      continue;
    }
    if (c !== '{') {
      i++;
      continue;
    }
    const raw = code.slice(headStart, i);
    const head = raw.trim().replace(/\s+/g, ' ');
    if (CONTAINER.test(head)) {
      // Looked into: its declarations are read as the file's are.
      headStart = i + 1;
      i++;
      continue;
    }
    const open = (raw.match(/\(/g) ?? []).length - (raw.match(/\)/g) ?? []).length;
    if (open > 0 || CTOR_MEMBER_INIT.test(head)) {
      // Inside the parameter list (a default argument's `[] {}`, `T{}`), or a member's braced initialiser in a
      // constructor's list (`: a_{1}, b_{2} {`): part of the head.
      i = skipBlock(i);
      continue;
    }
    const end = skipBlock(i);
    const isFunction =
      !ENUM.test(head) &&
      !outsideParens(head).includes('=') &&
      (SIGNATURE.test(head) || INITIALISER_LIST.test(head));
    if (isFunction) {
      const first = headStart + raw.search(/\S/);
      line = lineAt(first);
      const name = NAME.exec(head)?.[1] ?? '(anonymous)';
      out.push({ name, line, lines: lineAt(end - 1) - line + 1 });
    }
    i = end;
    // What follows the block (`};` of an initialiser, the next declaration) starts a new head.
    headStart = end;
  }
  return out;
}
