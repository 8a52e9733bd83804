// ESLint over the TypeScript sources and scripts: ESLint's and typescript-eslint's recommended rules.
// Formatting is Prettier's (.prettierrc.json); `npm run lint` runs both.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const nodeGlobals = {
  process: 'readonly',
  console: 'readonly',
  Buffer: 'readonly',
  URL: 'readonly',
  setTimeout: 'readonly',
  clearTimeout: 'readonly',
  setImmediate: 'readonly',
  setInterval: 'readonly',
  clearInterval: 'readonly',
  performance: 'readonly',
};

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'docs/api/', 'native-kernels/', '.dependency-cruiser.cjs'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      // A leading underscore marks a name kept on purpose: a rest destructure that drops fields, an interface's unused parameter.
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', destructuredArrayIgnorePattern: '^_' },
      ],
    },
  },
  // Plain-JavaScript fixtures and scripts run under Node: its globals are defined.
  { files: ['**/*.mjs', '**/*.js'], languageOptions: { globals: nodeGlobals } },
);
