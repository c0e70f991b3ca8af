// A small, independent GGUF v2/v3 reader for the tests that compare whole files: metadata as { key: { type,
// value } } and tensors as { name, dims, type, values } with f32 and f16 decoded to floats, Q8_0 dequantized and
// any other type left as its raw bytes.
const SCALARS = {
  0: ['getUint8', 1], 1: ['getInt8', 1], 2: ['getUint16', 2], 3: ['getInt16', 2], 4: ['getUint32', 4],
  5: ['getInt32', 4], 6: ['getFloat32', 4], 7: ['getUint8', 1], 10: ['getBigUint64', 8], 11: ['getBigInt64', 8],
  12: ['getFloat64', 8],
};

function halfToFloat(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const fraction = h & 0x3ff;
  if (exponent === 0) return sign * 2 ** -14 * (fraction / 1024);
  if (exponent === 31) return fraction ? NaN : sign * Infinity;
  return sign * 2 ** (exponent - 15) * (1 + fraction / 1024);
}

/** Parses bytes (a Uint8Array) into { version, metadata, tensors }; throws on anything it does not understand. */
export function readGguf(bytes) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let at = 0;
  const u32 = () => { const v = view.getUint32(at, true); at += 4; return v; };
  const u64 = () => { const v = Number(view.getBigUint64(at, true)); at += 8; return v; };
  const string = () => { const n = u64(); const s = decoder.decode(bytes.subarray(at, at + n)); at += n; return s; };
  const value = (type) => {
    if (type === 8) return string();
    if (type === 9) {
      const itemType = u32();
      const count = u64();
      return Array.from({ length: count }, () => value(itemType));
    }
    const scalar = SCALARS[type];
    if (!scalar) throw new Error(`readGguf: unknown value type ${type} at byte ${at}`);
    const [getter, size] = scalar;
    const v = view[getter](at, true);
    at += size;
    return typeof v === 'bigint' ? v.toString() : v;
  };
  if (decoder.decode(bytes.subarray(0, 4)) !== 'GGUF') throw new Error('readGguf: not a GGUF file');
  at = 4;
  const version = u32();
  const tensorCount = u64();
  const keyCount = u64();
  const metadata = {};
  for (let i = 0; i < keyCount; ++i) {
    const key = string();
    const type = u32();
    metadata[key] = { type, value: value(type) };
  }
  const infos = [];
  for (let i = 0; i < tensorCount; ++i) {
    const name = string();
    const dims = Array.from({ length: u32() }, () => u64());
    const type = u32();
    const offset = u64();
    infos.push({ name, dims, type, offset });
  }
  const alignment = metadata['general.alignment']?.value ?? 32;
  const dataStart = Math.ceil(at / alignment) * alignment;
  const tensors = infos.map(({ name, dims, type, offset }) => {
    const count = dims.reduce((a, b) => a * b, 1);
    const start = dataStart + offset;
    let values;
    if (type === 0) {
      values = Float32Array.from({ length: count }, (_, k) => view.getFloat32(start + 4 * k, true));
    } else if (type === 1) {
      values = Float32Array.from({ length: count }, (_, k) => halfToFloat(view.getUint16(start + 2 * k, true)));
    } else if (type === 8) {  // Q8_0: per 32 values one f16 scale and 32 int8
      values = new Float32Array(count);
      for (let block = 0; block < count / 32; ++block) {
        const base = start + 34 * block;
        const scale = halfToFloat(view.getUint16(base, true));
        for (let k = 0; k < 32; ++k) values[32 * block + k] = scale * view.getInt8(base + 2 + k);
      }
    } else {
      values = null;
    }
    const byteLength = { 0: 4 * count, 1: 2 * count, 8: (count / 32) * 34, 24: count }[type];
    const raw = byteLength === undefined ? null : bytes.subarray(start, start + byteLength);
    return { name, dims, type, values, raw };
  });
  return { version, metadata, tensors };
}
