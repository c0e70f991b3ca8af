"""SentencePiece BPE model -> GGUF tokenizer metadata (`tokenizer.<role>.*`), shared by every exporter.

    from attnlab.gguf.tokenizer import add_tokenizer
    add_tokenizer(writer, "models/tokenizers/multi30k.de.model", role="source")

Keys written (role is "source", "target", or any name):
    tokenizer.<role>.model                     string   "spm-bpe"
    tokenizer.<role>.tokens                    string[] piece text, index = id ("▁" marks a space)
    tokenizer.<role>.scores                    f32[]    merge priority: higher merges first
    tokenizer.<role>.token_type                i32[]    1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
    tokenizer.<role>.{bos,eos,unknown,padding}_token_id   u32 (a missing one is left out)
    tokenizer.<role>.add_dummy_prefix          bool
    tokenizer.<role>.remove_extra_whitespaces  bool

The .model file is a protobuf (sentencepiece_model.proto). Debian's python3-sentencepiece ships
sentencepiece_model_pb2 but not google.protobuf, so the few fields needed are read with the small wire-format
parser below; the result is cross-checked against the sentencepiece library itself.
"""
import struct

import sentencepiece as spm

# sentencepiece_model.proto field numbers
_MODEL_PIECES, _MODEL_TRAINER_SPEC, _MODEL_NORMALIZER_SPEC = 1, 2, 3
_PIECE_TEXT, _PIECE_SCORE, _PIECE_TYPE = 1, 2, 3
_TRAINER_MODEL_TYPE, _TRAINER_TREAT_WS_AS_SUFFIX, _TRAINER_BYTE_FALLBACK, _TRAINER_UNK_SURFACE = 3, 24, 35, 44
_NORM_NAME, _NORM_CHARSMAP, _NORM_ADD_DUMMY_PREFIX, _NORM_REMOVE_EXTRA_WS, _NORM_ESCAPE_WS = 1, 2, 3, 4, 5
_MODEL_TYPE_BPE = 2
_DEFAULT_UNK_SURFACE = " \u2047 "

TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE = 1, 2, 3, 4, 5, 6


def _varint(buf, pos):
    value, shift = 0, 0
    while True:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, pos


def _fields(buf):
    """Yields (field_number, wire_type, value) of one protobuf message; value is int or bytes."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + length], pos + length
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
        yield number, wire, value


def read_spm_model(path):
    """Returns dict(pieces, scores, types, model_type, byte_fallback, treat_whitespace_as_suffix, unk_surface,
    normalizer_name, has_charsmap, add_dummy_prefix, remove_extra_whitespaces, escape_whitespaces)."""
    with open(path, "rb") as f:
        buf = f.read()
    out = dict(pieces=[], scores=[], types=[], model_type=1, byte_fallback=False, treat_whitespace_as_suffix=False,
               unk_surface=_DEFAULT_UNK_SURFACE, normalizer_name="", has_charsmap=False,
               add_dummy_prefix=True, remove_extra_whitespaces=True, escape_whitespaces=True)
    for number, _, value in _fields(buf):
        if number == _MODEL_PIECES:
            piece, score, kind = "", 0.0, TOKEN_NORMAL
            for n, _, v in _fields(value):
                if n == _PIECE_TEXT:
                    piece = v.decode("utf-8")
                elif n == _PIECE_SCORE:
                    score = struct.unpack("<f", v)[0]
                elif n == _PIECE_TYPE:
                    kind = v
            out["pieces"].append(piece)
            out["scores"].append(score)
            out["types"].append(kind)
        elif number == _MODEL_TRAINER_SPEC:
            for n, _, v in _fields(value):
                if n == _TRAINER_MODEL_TYPE:
                    out["model_type"] = v
                elif n == _TRAINER_BYTE_FALLBACK:
                    out["byte_fallback"] = bool(v)
                elif n == _TRAINER_TREAT_WS_AS_SUFFIX:
                    out["treat_whitespace_as_suffix"] = bool(v)
                elif n == _TRAINER_UNK_SURFACE:
                    out["unk_surface"] = v.decode("utf-8")
        elif number == _MODEL_NORMALIZER_SPEC:
            for n, _, v in _fields(value):
                if n == _NORM_NAME:
                    out["normalizer_name"] = v.decode("utf-8")
                elif n == _NORM_CHARSMAP:
                    out["has_charsmap"] = len(v) > 0
                elif n == _NORM_ADD_DUMMY_PREFIX:
                    out["add_dummy_prefix"] = bool(v)
                elif n == _NORM_REMOVE_EXTRA_WS:
                    out["remove_extra_whitespaces"] = bool(v)
                elif n == _NORM_ESCAPE_WS:
                    out["escape_whitespaces"] = bool(v)
    return out


def _check_supported(path, m):
    """The C++ tokenizer implements exactly this subset of sentencepiece; refuse anything else at export time."""
    problems = []
    if m["model_type"] != _MODEL_TYPE_BPE:
        problems.append(f"model_type {m['model_type']} is not BPE (2)")
    if m["has_charsmap"]:
        problems.append(f"normalizer '{m['normalizer_name']}' has a charsmap; train with normalization_rule_name='identity'")
    if not m["escape_whitespaces"]:
        problems.append("escape_whitespaces=false is not supported")
    if m["treat_whitespace_as_suffix"]:
        problems.append("treat_whitespace_as_suffix=true is not supported")
    if m["unk_surface"] != _DEFAULT_UNK_SURFACE:
        problems.append("a custom unk_surface is not supported")
    has_bytes = TOKEN_BYTE in m["types"]
    if has_bytes != m["byte_fallback"]:
        problems.append("byte pieces present without byte_fallback (or the reverse)")
    if problems:
        raise ValueError(f"{path}: " + "; ".join(problems))

    # Cross-check the hand-parsed protobuf against the library's own view of the model.
    sp = spm.SentencePieceProcessor(model_file=path)
    if sp.get_piece_size() != len(m["pieces"]):
        raise ValueError(f"{path}: parsed {len(m['pieces'])} pieces, sentencepiece reports {sp.get_piece_size()}")
    for i, (piece, score, kind) in enumerate(zip(m["pieces"], m["scores"], m["types"])):
        if sp.id_to_piece(i) != piece or sp.get_score(i) != score:
            raise ValueError(f"{path}: piece {i} parsed as {piece!r}/{score}, sentencepiece says "
                             f"{sp.id_to_piece(i)!r}/{sp.get_score(i)}")
        flags = (sp.is_unknown(i), sp.is_control(i), sp.is_unused(i), sp.is_byte(i))
        expected = (kind == TOKEN_UNKNOWN, kind == TOKEN_CONTROL, kind == TOKEN_UNUSED, kind == TOKEN_BYTE)
        if flags != expected:
            raise ValueError(f"{path}: piece {i} {piece!r} type {kind} disagrees with sentencepiece {flags}")
    return sp


def add_tokenizer(writer, spm_model_path, role):
    """Adds `tokenizer.<role>.*` for the SentencePiece BPE model at spm_model_path to a GGUFWriter."""
    m = read_spm_model(spm_model_path)
    sp = _check_supported(spm_model_path, m)
    prefix = f"tokenizer.{role}."
    writer.add_string(prefix + "model", "spm-bpe")
    writer.add_array(prefix + "tokens", m["pieces"], "string")
    writer.add_array(prefix + "scores", [float(s) for s in m["scores"]], "float32")
    writer.add_array(prefix + "token_type", [int(t) for t in m["types"]], "int32")
    for key, value in (("bos_token_id", sp.bos_id()), ("eos_token_id", sp.eos_id()),
                       ("unknown_token_id", sp.unk_id()), ("padding_token_id", sp.pad_id())):
        if value >= 0:  # sentencepiece reports a disabled special token as -1
            writer.add_uint32(prefix + key, value)
    writer.add_bool(prefix + "add_dummy_prefix", m["add_dummy_prefix"])
    writer.add_bool(prefix + "remove_extra_whitespaces", m["remove_extra_whitespaces"])
    return m
