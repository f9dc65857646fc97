#!/usr/bin/env node
// Placeholder until the engine addon lands: nothing to build yet.
console.log('mnn-edge engine: addon sources not present yet; skipping native build');
