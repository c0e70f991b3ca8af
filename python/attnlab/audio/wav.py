"""WAV bytes -> float32 mono samples in [-1, 1] and the sample rate: the twin of src/attnlab/audio/wav.cpp, with
the same formats, the same conversions and the same error messages (docs/speech.md).

    PCM 8-bit (unsigned, (b - 128) / 128), 16, 24 and 32-bit (signed, / 2^(bits-1)), IEEE float 32 and 64 (clamped
    to [-1, 1]; NaN and infinities refused), as plain fmt chunks or WAVE_FORMAT_EXTENSIBLE; any channel count
    1..32, mixed to mono by the mean over the channels (in float64); any rate 1000..384000 Hz.
    A data chunk size of 0xFFFFFFFF (streamed WAV) means "to the end of the file"; a trailing partial sample frame
    is dropped.
"""
import struct

import numpy as np

MAX_CHANNELS = 32
MIN_SAMPLE_RATE = 1000
MAX_SAMPLE_RATE = 384000
STREAMED_SIZE = 0xFFFFFFFF

PCM, IEEE_FLOAT, EXTENSIBLE = 0x0001, 0x0003, 0xFFFE
KNOWN_FORMATS = {
    0x0002: "Microsoft ADPCM", 0x0006: "A-law", 0x0007: "mu-law", 0x0011: "IMA ADPCM", 0x0031: "GSM 6.10",
    0x0050: "MPEG", 0x0055: "MPEG Layer 3 (MP3)", 0x0161: "Windows Media Audio", 0x2000: "AC-3",
    0xF1AC: "FLAC",
}
# KSDATAFORMAT_SUBTYPE_*: the format code in the first two bytes, then this fixed tail
GUID_TAIL = bytes.fromhex("000000001000800000aa00389b71")


class WavError(ValueError):
    pass


def format_name(code):
    if code in KNOWN_FORMATS:
        return f"{KNOWN_FORMATS[code]} (format 0x{code:04X})"
    return f"format 0x{code:04X}"


def parse_wav(data):
    """bytes -> (samples float32 [n], sample_rate int)."""
    data = bytes(data)
    if len(data) < 12:
        raise WavError(f"WAV: {len(data)} bytes is too short for a RIFF/WAVE header (12 bytes)")
    magic, form = data[:4], data[8:12]
    if magic == b"RF64":
        raise WavError("WAV: RF64 (WAV over 4 GB) is not supported")
    if magic == b"RIFX":
        raise WavError("WAV: RIFX (big-endian WAV) is not supported")
    if magic != b"RIFF" or form != b"WAVE":
        raise WavError("WAV: not a RIFF/WAVE file (it must start with 'RIFF' and have 'WAVE' at byte 8)")
    fmt = None
    pos = 12
    while pos + 8 <= len(data):
        chunk_id = data[pos:pos + 4]
        (size,) = struct.unpack("<I", data[pos + 4:pos + 8])
        body = pos + 8
        if chunk_id == b"fmt ":
            if size > len(data) - body:
                raise WavError(f"WAV: truncated fmt chunk ({size} bytes declared, {len(data) - body} present)")
            fmt = _parse_fmt(data[body:body + size])
        elif chunk_id == b"data":
            if fmt is None:
                raise WavError("WAV: the data chunk comes before any fmt chunk")
            available = len(data) - body
            if size == STREAMED_SIZE:
                size = available
            elif size > available:
                raise WavError(f"WAV: truncated data chunk ({size} bytes declared, {available} present)")
            return _decode(data[body:body + size], fmt), fmt["rate"]
        pos = body + size + (size & 1)
    if fmt is None:
        raise WavError("WAV: no fmt chunk")
    raise WavError("WAV: no data chunk")


def _parse_fmt(chunk):
    if len(chunk) < 16:
        raise WavError(f"WAV: fmt chunk of {len(chunk)} bytes is too short (16 needed)")
    code, channels, rate, _byte_rate, block_align, bits = struct.unpack("<HHIIHH", chunk[:16])
    if code == EXTENSIBLE:
        if len(chunk) < 40:
            raise WavError(f"WAV: WAVE_FORMAT_EXTENSIBLE fmt chunk of {len(chunk)} bytes is too short (40 needed)")
        guid = chunk[24:40]
        if guid[2:] != GUID_TAIL:
            raise WavError("WAV: WAVE_FORMAT_EXTENSIBLE with an unknown sub-format GUID")
        (code,) = struct.unpack("<H", guid[:2])
    if code not in (PCM, IEEE_FLOAT):
        raise WavError(f"WAV: unsupported encoding {format_name(code)}: only PCM and IEEE float are read")
    if channels == 0:
        raise WavError("WAV: zero channels")
    if channels > MAX_CHANNELS:
        raise WavError(f"WAV: {channels} channels (at most {MAX_CHANNELS})")
    if not MIN_SAMPLE_RATE <= rate <= MAX_SAMPLE_RATE:
        raise WavError(f"WAV: sample rate {rate} Hz is outside {MIN_SAMPLE_RATE}..{MAX_SAMPLE_RATE}")
    if code == PCM and bits not in (8, 16, 24, 32):
        raise WavError(f"WAV: {bits}-bit PCM is not supported (8, 16, 24 or 32)")
    if code == IEEE_FLOAT and bits not in (32, 64):
        raise WavError(f"WAV: {bits}-bit float is not supported (32 or 64)")
    if block_align != channels * (bits // 8):
        raise WavError(f"WAV: block align {block_align} does not match {channels} channels of {bits} bits")
    return {"code": code, "channels": channels, "rate": rate, "bits": bits, "block_align": block_align}


def _decode(body, fmt):
    frames = len(body) // fmt["block_align"]
    body = body[:frames * fmt["block_align"]]
    bits, channels = fmt["bits"], fmt["channels"]
    if fmt["code"] == IEEE_FLOAT:
        x = np.frombuffer(body, dtype="<f4" if bits == 32 else "<f8").astype(np.float64)
        bad = np.flatnonzero(~np.isfinite(x))
        if bad.size:
            raise WavError(f"WAV: sample {bad[0] // channels} is not finite ({x[bad[0]]})")
        x = np.clip(x, -1.0, 1.0)
    elif bits == 8:
        x = (np.frombuffer(body, dtype=np.uint8).astype(np.float64) - 128.0) / 128.0
    elif bits == 16:
        x = np.frombuffer(body, dtype="<i2").astype(np.float64) / 32768.0
    elif bits == 24:
        b = np.frombuffer(body, dtype=np.uint8).reshape(-1, 3).astype(np.int32)
        v = b[:, 0] | (b[:, 1] << 8) | (b[:, 2] << 16)
        v = np.where(v >= 1 << 23, v - (1 << 24), v)
        x = v.astype(np.float64) / 8388608.0
    else:
        x = np.frombuffer(body, dtype="<i4").astype(np.float64) / 2147483648.0
    x = x.reshape(frames, channels)
    mono = x[:, 0] if channels == 1 else x.sum(axis=1) / channels
    return mono.astype(np.float32)


def read_wav(path):
    with open(path, "rb") as f:
        return parse_wav(f.read())


def wav_bytes(samples, rate, encoding="pcm16", channels=1, extensible=False):
    """Encodes [n] (or [n, channels]) float samples in [-1, 1] as a WAV: pcm8, pcm16, pcm24, pcm32, float32,
    float64. For the fixtures and tests (integer PCM rounds to nearest and clips)."""
    x = np.asarray(samples, dtype=np.float64)
    if x.ndim == 1:
        x = np.repeat(x[:, None], channels, axis=1)
    channels = x.shape[1]
    kind, bits = ("float", int(encoding[5:])) if encoding.startswith("float") else ("pcm", int(encoding[3:]))
    if kind == "float":
        body = x.astype("<f4" if bits == 32 else "<f8").tobytes()
        code = IEEE_FLOAT
    else:
        scale = 2.0 ** (bits - 1)
        q = np.clip(np.round(x * scale), -scale, scale - 1).astype(np.int64)
        if bits == 8:
            body = (q + 128).astype(np.uint8).tobytes()
        elif bits == 24:
            u = (q & 0xFFFFFF).astype(np.uint32).reshape(-1)
            body = np.stack([u & 0xFF, (u >> 8) & 0xFF, (u >> 16) & 0xFF], axis=1).astype(np.uint8).tobytes()
        else:
            body = q.astype("<i2" if bits == 16 else "<i4").tobytes()
        code = PCM
    block_align = channels * bits // 8
    if extensible:
        fmt = struct.pack("<HHIIHHHHI", EXTENSIBLE, channels, rate, rate * block_align, block_align, bits, 22,
                          bits, 0) + struct.pack("<H", code) + GUID_TAIL
    else:
        fmt = struct.pack("<HHIIHH", code, channels, rate, rate * block_align, block_align, bits)
    chunks = b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(body)) + body
    if len(body) & 1:
        chunks += b"\0"
    return b"RIFF" + struct.pack("<I", 4 + len(chunks)) + b"WAVE" + chunks
