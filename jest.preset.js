// Shared Jest settings. Each project's jest.config.js declares two Jest projects:
// "unit" (*.test.ts beside the code, no services) and "integration" (test/**/*.int.test.ts,
// needs the local Kafka / S3 / registry started by tools/test-all.sh).
const fs = require('node:fs');
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
      // `content-disposition`; both ship only as ES modules, which Node can require() but
      // Jest's module runtime cannot, so Jest compiles those two packages to CommonJS.
      [`node_modules/(${ESM_ONLY.join('|')})/.+\\.js$`]: ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
    },
    transformIgnorePatterns: [`/node_modules/(?!(${ESM_ONLY.join('|')})/)`],
    moduleFileExtensions: ['ts', 'js', 'json'],
    moduleNameMapper: pathsToModuleNameMapper(compilerOptions.paths, { prefix: root + '/' }),
    ...extra,
  };
}

/**
 * Refuses a Node.js of another major than the one tools/setup/node.sh pins: setup built the
 * native Kafka addon for that one, and any other fails to load it with a less helpful message.
 */
function checkNode() {
  const pinned = /^SLUICE_NODE_VERSION=(\d+)\./m.exec(fs.readFileSync(path.join(root, 'tools/setup/node.sh'), 'utf8'));
  if (!pinned) throw new Error('tools/setup/node.sh does not set SLUICE_NODE_VERSION');
  if (process.versions.node.split('.')[0] !== pinned[1]) {
    throw new Error(`Sluice's tests run on Node.js ${pinned[1]}, the Node its native Kafka addon is built for, not ${process.version}: run 'source tools/setup/node.sh' first`);
  }
}

/** Builds the jest config of one Nx project from its directory. */
function jestConfig(projectDir, options = {}) {
  checkNode();
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
