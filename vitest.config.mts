import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['__test__/**/*.spec.ts'],
    exclude: ['__test__/jest/**', 'node_modules/**'],
    testTimeout: 60_000,
    // Tests run in worker threads as well as the default child processes: the addon must load in both.
    pool: 'threads',
    // Builds the test-only worker (test-hooks feature) once, before any test file runs.
    globalSetup: ['__test__/setup/test-hooks-worker.ts'],
  },
})
