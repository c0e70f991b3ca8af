// attnlab: attention encoder-decoders in SIMD WebAssembly, with every attention weight returned.
import { callEngine, loadEngine } from './engine.mjs';

export { loadEngine };

/** { version, simd, wasm }: which engine build is running. */
export async function engineInfo() {
  return callEngine((engine) => engine.engineInfo());
}
