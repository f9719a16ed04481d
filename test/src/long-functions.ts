// Lists the functions longer than a limit in TypeScript sources, by their syntax tree (the typescript
// compiler's parser): function declarations, methods, constructors, accessors, arrow functions and
// function expressions, each measured from its first to its last line, nested ones included in their
// parent's length. `npx tsx test/src/long-functions.ts DIR...` prints them; function-size.test.ts
// holds the packages that were split to it.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';

export interface LongFunction {
  /** path relative to `root` */
  file: string;
  line: number;
  name: string;
  lines: number;
}

function nameOf(node: ts.FunctionLikeDeclaration, sf: ts.SourceFile, owner: string): string {
  if (node.name) return node.name.getText(sf);
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText(sf);
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  return `(anonymous, in ${owner})`;
}

/** The functions of one file longer than `limit` lines. */
export function longFunctionsIn(path: string, source: string, limit: number): Omit<LongFunction, 'file'>[] {
  const sf = ts.createSourceFile(path, source, ts.ScriptTarget.Latest, true);
  const found: Omit<LongFunction, 'file'>[] = [];
  const visit = (node: ts.Node, owner: string): void => {
    let inner = owner;
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const fn = node as ts.FunctionLikeDeclaration;
      const first = sf.getLineAndCharacterOfPosition(fn.getStart(sf)).line;
      const last = sf.getLineAndCharacterOfPosition(fn.end).line;
      inner = nameOf(fn, sf, owner);
      if (last - first + 1 > limit) found.push({ line: first + 1, name: inner, lines: last - first + 1 });
    }
    ts.forEachChild(node, (child) => visit(child, inner));
  };
  visit(sf, 'module');
  return found;
}

/** Non-test .ts files under `dir` (tests are left out: a describe block is a list, not a function). */
export function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) return entry === 'node_modules' ? [] : sourceFiles(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') && !path.endsWith('.d.ts') ? [path] : [];
  });
}

/** Every function over `limit` lines in the given folders, longest first. */
export function longFunctions(root: string, dirs: string[], limit = 80): LongFunction[] {
  return dirs
    .flatMap((dir) => sourceFiles(join(root, dir)))
    .flatMap((path) =>
      longFunctionsIn(path, readFileSync(path, 'utf8'), limit).map((f) => ({
        file: relative(root, path),
        ...f,
      })),
    )
    .sort((a, b) => b.lines - a.lines);
}

if (process.argv[1] && import.meta.filename === process.argv[1]) {
  for (const f of longFunctions(process.cwd(), process.argv.slice(2)))
    console.log(`${String(f.lines).padStart(4)}  ${f.file}:${f.line}  ${f.name}`);
}
