import { readdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const root = import.meta.dirname;
const services = readdirSync(join(root, 'services'));

/** The workspace folder a file lies in ('services/ingest', 'packages/store'), else undefined. */
function workspaceOf(path) {
  const [kind, name] = relative(root, path).split(sep);
  return (kind === 'services' || kind === 'packages') && name ? `${kind}/${name}` : undefined;
}

/**
 * Only services/standalone composes services: no other service imports one (`@herald/<service>`
 * or a relative path into its folder), tests included, and packages import none.
 */
const serviceBoundaries = {
  meta: {
    type: 'problem',
    schema: [],
    messages: {
      service: '{{from}} must not import {{to}}: only services/standalone composes services.',
      package: '{{from}} must not import {{to}}: packages never depend on services.',
    },
  },
  create(context) {
    const from = workspaceOf(context.filename);
    if (!from || from === 'services/standalone') return {};
    const check = ({ source }) => {
      if (source?.type !== 'Literal' || typeof source.value !== 'string') return;
      const specifier = source.value;
      const name = /^@herald\/([^/]+)/.exec(specifier)?.[1];
      const to = specifier.startsWith('.')
        ? workspaceOf(resolve(dirname(context.filename), specifier))
        : name && services.includes(name)
          ? `services/${name}`
          : undefined;
      if (!to?.startsWith('services/') || to === from) return;
      const messageId = from.startsWith('packages/') ? 'package' : 'service';
      context.report({ node: source, messageId, data: { from, to } });
    };
    return {
      ImportDeclaration: check,
      ImportExpression: check,
      ExportAllDeclaration: check,
      ExportNamedDeclaration: check,
    };
  },
};

export default tseslint.config(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      '.herald/**',
      'coverage/**',
      '**/*.js',
      '**/*.mjs',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        project: [
          './packages/*/tsconfig.json',
          './services/*/tsconfig.json',
          './tsconfig.tests.json',
        ],
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': [
        'error',
        { checksVoidReturn: { arguments: false, attributes: false } },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/only-throw-error': 'error',
    },
  },
  {
    plugins: { herald: { rules: { 'service-boundaries': serviceBoundaries } } },
    rules: { 'herald/service-boundaries': 'error' },
  },
  {
    // Tests and benchmarks are outside the packages' tsconfig.json (which exclude them):
    // type-check them with tsconfig.tests.json instead of the nearest project.
    files: ['**/*.test.ts', 'bench/**/*.ts'],
    languageOptions: {
      parserOptions: {
        projectService: false,
        project: './tsconfig.tests.json',
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
    },
  },
);
