// A small Jest suite: the addon must load and behave under Jest's module system and workers too.
module.exports = {
  rootDir: __dirname,
  testMatch: ['**/*.test.cjs'],
  testEnvironment: 'node',
}
