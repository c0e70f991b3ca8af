// Emscripten 3.1.6 instantiates through fetch() whenever a global fetch exists, and Node 20's fetch cannot read
// file paths. Shadowing it here makes the Node-only builds (tests, benchmarks) read the .wasm from disk.
var fetch = undefined;
