// `@codecall/native/gateway`: the pieces of the `codecall` CLI, for embedding the gateway in a
// process of your own (tests, a custom transport). The CLI (cli.mjs) is these, wired together.
export { ConfigError, DEFAULT_CONFIG_PATH, expandEnv, globToRegExp, loadConfig, parseConfig } from './config.mjs'
export { Gateway, RequestScope, unwrapResult, userCacheDir, VERSION } from './gateway.mjs'
export { isLoopback, serveHttp, serveStdio, Sessions } from './server.mjs'
export { GatewayError, isInternalTool } from './upstream.mjs'
