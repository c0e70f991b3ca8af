// Interop: an independent GGUF parser (@huggingface/gguf) reads the fixtures python/attnlab/gguf/writer.py wrote
// and must find exactly the metadata and tensor table the writer meant (recorded in each fixture's .json
// sidecar by python/attnlab/golden/gguf_files.py). Also reads tensor bytes at the offsets it reports.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

import { gguf, GGMLQuantizationType, GGUFValueType } from '@huggingface/gguf';

const fixtureDir = fileURLToPath(new URL('../fixtures/gguf/', import.meta.url));
const fixtures = ['basic', 'aligned64', 'metadata_only', 'tiny'];

const valueTypeIds = {
  uint8: GGUFValueType.UINT8, int8: GGUFValueType.INT8, uint16: GGUFValueType.UINT16, int16: GGUFValueType.INT16,
  uint32: GGUFValueType.UINT32, int32: GGUFValueType.INT32, float32: GGUFValueType.FLOAT32, bool: GGUFValueType.BOOL,
  string: GGUFValueType.STRING, array: GGUFValueType.ARRAY, uint64: GGUFValueType.UINT64, int64: GGUFValueType.INT64,
  float64: GGUFValueType.FLOAT64,
};
const tensorTypeIds = { f32: GGMLQuantizationType.F32, f16: GGMLQuantizationType.F16, q8_0: GGMLQuantizationType.Q8_0 };

// The sidecar stores 64-bit integers as decimal strings; the parser returns them as BigInt.
function expectedScalar(type, value) {
  return type === 'uint64' || type === 'int64' ? BigInt(value) : value;
}

async function load(name) {
  const path = fixtureDir + name + '.gguf';
  const sidecar = JSON.parse(await readFile(fixtureDir + name + '.json', 'utf8'));
  const parsed = await gguf(path, { allowLocalFile: true, typedMetadata: true });
  return { path, sidecar, parsed };
}

function f16ToF32(h) {
  const sign = h & 0x8000 ? -1 : 1;
  const exponent = (h >> 10) & 0x1f;
  const mantissa = h & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 31) return mantissa ? NaN : sign * Infinity;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}

for (const name of fixtures) {
  test(`@huggingface/gguf reads ${name}.gguf's metadata as written`, async () => {
    const { sidecar, parsed } = await load(name);
    const { metadata, typedMetadata } = parsed;
    assert.equal(metadata.version, sidecar.version);
    assert.equal(metadata.kv_count, BigInt(sidecar.metadata.length));
    assert.equal(metadata.tensor_count, BigInt(sidecar.tensors.length));
    // Same keys in the same order (the parser puts version/tensor_count/kv_count first).
    const keys = Object.keys(metadata).filter((k) => !['version', 'tensor_count', 'kv_count'].includes(k));
    assert.deepEqual(keys, sidecar.metadata.map((m) => m.key));

    for (const entry of sidecar.metadata) {
      const typed = typedMetadata[entry.key];
      assert.ok(typed, `key ${entry.key} missing`);
      assert.equal(typed.type, valueTypeIds[entry.type], `type of ${entry.key}`);
      if (entry.type === 'array') {
        assert.equal(typed.subType, valueTypeIds[entry.element_type], `element type of ${entry.key}`);
        assert.deepEqual(typed.value, entry.value.map((v) => expectedScalar(entry.element_type, v)), entry.key);
      } else {
        assert.deepEqual(typed.value, expectedScalar(entry.type, entry.value), entry.key);
      }
    }
    const alignment = typedMetadata['general.alignment'];
    assert.equal(alignment ? alignment.value : 32, sidecar.alignment);
  });

  test(`@huggingface/gguf reads ${name}.gguf's tensor table as written`, async () => {
    const { path, sidecar, parsed } = await load(name);
    const { tensorInfos, tensorDataOffset } = parsed;
    assert.deepEqual(
      tensorInfos.map((t) => ({ name: t.name, dims: t.shape, dtype: t.dtype, offset: t.offset })),
      sidecar.tensors.map((t) => ({
        name: t.name, dims: t.ggml_dims.map(BigInt), dtype: tensorTypeIds[t.dtype], offset: BigInt(t.offset),
      })),
    );
    if (sidecar.tensors.length === 0) return;
    const { size } = await stat(path);
    assert.equal(tensorDataOffset % BigInt(sidecar.alignment), 0n);
    for (const t of sidecar.tensors) {
      assert.equal(t.offset % sidecar.alignment, 0, `${t.name} offset aligned`);
      assert.ok(tensorDataOffset + BigInt(t.offset + t.n_bytes) <= BigInt(size), `${t.name} inside the file`);
    }
  });
}

test('tensor bytes at the parser\'s offsets decode to the values numpy expects', async () => {
  const { path, parsed } = await load('basic');
  const bytes = await readFile(path);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const meta = parsed.metadata;
  const info = (tensorName) => parsed.tensorInfos.find((t) => t.name === tensorName);
  const start = (tensorName) => Number(parsed.tensorDataOffset + info(tensorName).offset);

  const dense = Array.from({ length: 15 }, (_, i) => view.getFloat32(start('dense.weight') + 4 * i, true));
  assert.deepEqual(dense, meta['expected.dense.weight']);

  const bias = Array.from({ length: 7 }, (_, i) => f16ToF32(view.getUint16(start('dense.bias') + 2 * i, true)));
  assert.deepEqual(bias, meta['expected.dense.bias']);

  // Q8_0: 34-byte blocks of an f16 scale and 32 int8; w = scale * q (a float32 product, so round each).
  const q8 = [];
  for (let b = 0; b < 4; ++b) {
    const block = start('proj.weight') + 34 * b;
    const scale = f16ToF32(view.getUint16(block, true));
    for (let j = 0; j < 32; ++j) q8.push(Math.fround(scale * view.getInt8(block + 2 + j)));
  }
  assert.deepEqual(q8, meta['expected.proj.weight']);
});
