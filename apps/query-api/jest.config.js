// @fastify/swagger-ui loads content-disposition and light-my-request loads cookie; both ship only as an ES module; Node 20 can
// require() it but Jest's module runtime cannot, so Jest compiles that one package to CommonJS.
const esmOnly = {
  transform: {
    '^.+\\.ts$': ['@swc/jest', { jsc: { parser: { syntax: 'typescript' }, target: 'es2022' }, module: { type: 'commonjs' } }],
    'node_modules/(content-disposition|cookie)/.+\\.js$': ['@swc/jest', { jsc: { target: 'es2022' }, module: { type: 'commonjs' } }],
  },
  transformIgnorePatterns: ['/node_modules/(?!(content-disposition|cookie)/)'],
};
module.exports = require('../../jest.preset.js').jestConfig(__dirname, { unit: esmOnly, integration: esmOnly });
