// Syntax check of Bicep files, offline: parses each .bicep file with the
// tree-sitter-bicep grammar (its WebAssembly build, run by web-tree-sitter;
// both pinned in package.json) and reports every ERROR or MISSING node.
// There is no Bicep compiler here, so this catches syntax only: no types,
// no property names, no API versions (internal/testing/infracheck checks those on
// the text).
//
// Usage: node infra/scripts/check-bicep.mjs [file-or-directory ...]
// (default: infra). Exit status 0 when every file parses, 1 when one does
// not, 2 when the parser cannot be loaded.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

const require = createRequire(import.meta.url);

function bicepFiles(path) {
  if (statSync(path).isDirectory()) {
    return readdirSync(path)
      .sort()
      .flatMap((name) => (name === 'node_modules' ? [] : bicepFiles(join(path, name))));
  }
  return path.endsWith('.bicep') ? [path] : [];
}

function problems(node, out) {
  if (node.isError || node.isMissing) {
    const { row, column } = node.startPosition;
    const what = node.isMissing ? `missing ${node.type}` : `unexpected ${JSON.stringify(node.text.slice(0, 40))}`;
    out.push(`${row + 1}:${column + 1}: ${what}`);
    if (node.isMissing) return out;
  }
  if (node.hasError || node.isError) {
    for (const child of node.children) problems(child, out);
  }
  return out;
}

let parser;
try {
  const { Parser, Language } = await import('web-tree-sitter');
  await Parser.init();
  const wasm = join(require.resolve('tree-sitter-bicep/package.json'), '..', 'tree-sitter-bicep.wasm');
  parser = new Parser();
  parser.setLanguage(await Language.load(wasm));
} catch (err) {
  console.error(`check-bicep: cannot load web-tree-sitter and tree-sitter-bicep (npm ci): ${err.message}`);
  process.exit(2);
}

const args = process.argv.slice(2);
const files = (args.length ? args : ['infra']).flatMap(bicepFiles);
if (files.length === 0) {
  console.error('check-bicep: no .bicep files');
  process.exit(2);
}
let failed = 0;
for (const file of files) {
  const tree = parser.parse(readFileSync(file, 'utf8'));
  const found = tree.rootNode.hasError ? problems(tree.rootNode, []) : [];
  if (tree.rootNode.hasError && found.length === 0) found.push('1:1: the parse tree has errors');
  for (const p of found) console.log(`${file}:${p}`);
  if (found.length) failed++;
  tree.delete();
}
console.log(`check-bicep: ${files.length - failed} of ${files.length} files parse`);
process.exit(failed ? 1 : 0);
