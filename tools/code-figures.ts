/**
 * Two figures of how hard `src/` is to live in, for a tree given as a directory (a checkout of any
 * commit): `npx tsx tools/code-figures.ts [DIR]` (default: this checkout).
 *   - mutable fields: class fields and constructor parameter properties not `readonly`, and
 *     module-level `let`s;
 *   - the longest functions: declarations, methods, constructors, accessors, and function
 *     expressions or arrows bound to a name, with their length in lines.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { isEntryPoint } from './harness.js';

export interface CodeFigures {
  mutableFields: { where: string; name: string }[];
  longestFunctions: { where: string; name: string; lines: number }[];
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith('.ts') && !name.endsWith('.d.ts') ? [path] : [];
  });
}

const isReadonly = (node: ts.Node): boolean =>
  ts.canHaveModifiers(node) &&
  (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ReadonlyKeyword);

const nameOf = (node: ts.Node): string | null => {
  if (
    (ts.isFunctionDeclaration(node) ||
      ts.isMethodDeclaration(node) ||
      ts.isGetAccessorDeclaration(node) ||
      ts.isSetAccessorDeclaration(node)) &&
    node.name !== undefined
  )
    return node.name.getText();
  if (ts.isConstructorDeclaration(node)) return 'constructor';
  if (
    (ts.isArrowFunction(node) || ts.isFunctionExpression(node)) &&
    (ts.isVariableDeclaration(node.parent) ||
      ts.isPropertyAssignment(node.parent) ||
      ts.isPropertyDeclaration(node.parent))
  )
    return node.parent.name.getText();
  return null;
};

export function codeFigures(root: string, top = 5): CodeFigures {
  const figures: CodeFigures = { mutableFields: [], longestFunctions: [] };
  const functions: CodeFigures['longestFunctions'] = [];
  for (const file of sourceFiles(join(root, 'src'))) {
    const where = relative(root, file);
    const source = ts.createSourceFile(file, readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
    const line = (pos: number): number => source.getLineAndCharacterOfPosition(pos).line;
    const visit = (node: ts.Node): void => {
      if (ts.isPropertyDeclaration(node) && !isReadonly(node))
        figures.mutableFields.push({ where, name: node.name.getText() });
      if (ts.isParameter(node) && ts.isConstructorDeclaration(node.parent)) {
        const modifiers = ts.getModifiers(node) ?? [];
        const isProperty = modifiers.some((m) =>
          [
            ts.SyntaxKind.PrivateKeyword,
            ts.SyntaxKind.ProtectedKeyword,
            ts.SyntaxKind.PublicKeyword,
          ].includes(m.kind),
        );
        if ((isProperty || isReadonly(node)) && !isReadonly(node))
          figures.mutableFields.push({ where, name: node.name.getText() });
      }
      if (
        ts.isVariableStatement(node) &&
        ts.isSourceFile(node.parent) &&
        (node.declarationList.flags & ts.NodeFlags.Let) !== 0
      ) {
        for (const declaration of node.declarationList.declarations)
          figures.mutableFields.push({ where, name: declaration.name.getText() });
      }
      const name = nameOf(node);
      if (name !== null)
        functions.push({ where, name, lines: line(node.getEnd()) - line(node.getStart()) + 1 });
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  figures.longestFunctions = functions.sort((a, b) => b.lines - a.lines).slice(0, top);
  return figures;
}

if (isEntryPoint(import.meta.url)) {
  const root = process.argv[2] ?? process.cwd();
  const figures = codeFigures(root);
  console.log(`${root}: ${figures.mutableFields.length} mutable fields in src/`);
  for (const f of figures.mutableFields) console.log(`  ${f.where}: ${f.name}`);
  console.log('five longest functions:');
  for (const f of figures.longestFunctions) console.log(`  ${f.lines} lines  ${f.where}: ${f.name}`);
}
