import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/**
 * The layers of src/, low to high. A folder may import its own layer and the layers below it, never
 * one above (testing/ stands apart: it may import only core/ and errors/).
 */
// Every folder of src/ is in a layer (src/testing apart: it may import only core and errors).
// `ledger` is the coordination port (QuotaLedger, the in-process ledger); `redis` and `sqlite`
// implement it; `ledgers` turns a ledger string into one of them, so it sits above both; the
// guard (policy above the port) imports `ledgers` directly.
const LAYERS = [['core', 'errors'], ['transport'], ['auth'], ['config'], ['delete'], ['nova'], ['ledger'], ['redis', 'sqlite'], ['ledgers'], ['guard', 'audit', 'reaper'], ['cli']];
const zones = LAYERS.flatMap((layer, i) =>
  layer.map((folder) => ({
    target: `./src/${folder}`,
    from: [...LAYERS.slice(i + 1).flat(), 'testing'].filter((f) => !(folder === 'cli' && f === 'testing')).map((f) => `./src/${f}`),
    message: `src/${folder} must not import a higher layer (see LAYERS in eslint.config.js)`,
  })),
).filter((zone) => zone.from.length > 0);
zones.push({
  target: './src/testing',
  from: LAYERS.flat().filter((f) => f !== 'core' && f !== 'errors').map((f) => `./src/${f}`),
  message: 'src/testing may import only src/core and src/errors',
});

/**
 * Selectors of module-level mutable state in `folder`: a `let`, or an object made with `new` (a Map, a
 * WeakMap, a controller) unless typed read-only (`ReadonlySet`, `ReadonlyMap`: a constant).
 */
function moduleState(folder) {
  const message = `no module-level state in ${folder}: make it a field of the object it belongs to`;
  return ['Program > VariableDeclaration', 'Program > ExportNamedDeclaration > VariableDeclaration'].flatMap((decl) => [
    { selector: `${decl}[kind="let"]`, message },
    { selector: `${decl} > VariableDeclarator:not([id.typeAnnotation.typeAnnotation.typeName.name=/^Readonly/]) > NewExpression.init`, message },
  ]);
}

export default tseslint.config(
  { ignores: ['dist/**', 'build/**', 'node_modules/**', 'bench/results/**', 'coverage/**', 'docs/api/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      // No import cycles, type-only imports included: the folders are layers.
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones }],
      // A smell, not a wall: a file is one concept, split by concept and never to fit a count.
      'max-lines': ['warn', { max: 600, skipBlankLines: false, skipComments: false }],
    },
  },
  // No module-level mutable state in the capabilities that coordinate: state is the state of the
  // object it belongs to (an engine per client, a guard, a ledger), never of a module every one shares.
  ...['src/delete', 'src/ledger', 'src/guard', 'src/redis'].map((folder) => ({
    files: [`${folder}/**/*.ts`],
    rules: {
      'no-restricted-syntax': ['error', ...moduleState(folder)],
    },
  })),
);
