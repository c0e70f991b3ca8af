export interface EngineInfo {
  /** The engine version, e.g. "0.1.0". */
  version: string;
  /** The SIMD instruction set the kernels were compiled for. */
  simd: string;
  /** True in the WebAssembly build. */
  wasm: boolean;
}

/** Which engine build is running. */
export function engineInfo(): Promise<EngineInfo>;

/** Loads the wasm engine once; pass the .wasm bytes to skip fetching or reading it. */
export function loadEngine(options?: { wasmBinary?: ArrayBuffer | Uint8Array }): Promise<unknown>;
