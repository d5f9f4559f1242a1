// Shared Jest settings. Each project's jest.config.js declares two Jest projects:
// "unit" (*.test.ts beside the code, no services) and "integration" (test/**/*.int.test.ts,
// needs the local Kafka / S3 / registry started by tools/test-all.sh).
const path = require('node:path');
const { pathsToModuleNameMapper } = require('ts-jest');
const { compilerOptions } = require('./tsconfig.base.json');

const root = __dirname;
const ESM_ONLY = ['content-disposition', 'cookie'];

function project(displayName, projectRoot, testMatch, extra = {}) {
  return {
    displayName,
    rootDir: projectRoot,
    testEnvironment: 'node',
    testEnvironmentOptions: { globalsCleanup: 'off' },
    testMatch,
    transform: {
      '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
      // fastify's inject() (light-my-request) loads `cookie` and @fastify/swagger-ui loads
      // `content-disposition`; both ship only as ES modules, which Node 20 can require() but
      // Jest's module runtime cannot, so Jest compiles those two packages to CommonJS.
      [`node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
    },
    transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
    moduleFileExtensions: ['ts', 'js', 'json'],
    moduleNameMapper: pathsToModuleNameMapper(compilerOptions.paths, { prefix: root + '/' }),
    ...extra,
  };
}

/** Builds the jest config of one Nx project from its directory. */
function jestConfig(projectDir, options = {}) {
  const projectRoot = path.resolve(projectDir);
  return {
    reporters: ['default', path.join(root, 'tools/jest/summary-reporter.js')],
    projects: [
      project('unit', projectRoot, ['<rootDir>/src/**/*.test.ts'], options.unit),
      project('integration', projectRoot, ['<rootDir>/test/**/*.int.test.ts'], {
        setupFilesAfterEnv: [path.join(root, 'tools/jest/integration-setup.js')],
        ...options.integration,
      }),
    ],
  };
}

module.exports = { jestConfig };
