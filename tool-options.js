'use strict'
// Type-only entry: see tool-options.d.ts. Importing it at run time is harmless.
module.exports = {}
