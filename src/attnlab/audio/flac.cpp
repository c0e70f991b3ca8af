// See flac.hpp. Every read goes through BitReader, which checks the bits left before it reads; decoded samples
// are checked against the bits their subframe declares, so corrupt predictors cannot overflow the int64 maths.
#include "attnlab/audio/flac.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "attnlab/error.hpp"

namespace attnlab::audio {

namespace {

constexpr int kStreamInfoSize = 34;
constexpr int kMaxChannels = 8;
constexpr int kMaxLpcOrder = 32;

class BitReader {
public:
    BitReader(const uint8_t* data, std::size_t size) : data_(data), size_(size) {}

    // n = 0..64 bits, most significant first.
    uint64_t bits(int n) {
        if (n > 64 || uint64_t(n) > bits_left()) fail("FLAC: truncated frame");
        uint64_t v = 0;
        while (n > 0) {
            const int in_byte = 8 - int(bit_ & 7);
            const int take = n < in_byte ? n : in_byte;
            const uint64_t byte = data_[bit_ >> 3];
            v = (v << take) | ((byte >> (in_byte - take)) & ((1u << take) - 1));
            bit_ += uint64_t(take);
            n -= take;
        }
        return v;
    }
    // n = 1..64 bits, two's complement.
    int64_t signed_bits(int n) {
        const uint64_t v = bits(n);
        if (n == 64) return int64_t(v);
        const uint64_t sign = uint64_t(1) << (n - 1);
        return int64_t(v ^ sign) - int64_t(sign);
    }
    // Zeros before the next one (which is consumed), at most limit of them.
    uint64_t unary(uint64_t limit) {
        uint64_t zeros = 0;
        for (;;) {
            if (bit_ >= uint64_t(size_) * 8) fail("FLAC: truncated frame");
            // Whole zero bytes at once: long runs are legal in escape-free partitions of silence.
            if ((bit_ & 7) == 0 && data_[bit_ >> 3] == 0) {
                zeros += 8;
                bit_ += 8;
            } else if ((data_[bit_ >> 3] >> (7 - (bit_ & 7))) & 1) {
                ++bit_;
                return zeros;
            } else {
                ++zeros;
                ++bit_;
            }
            if (zeros > limit) fail("FLAC: corrupt residual (a Rice quotient over " + std::to_string(limit) + ")");
        }
    }
    void align() { bit_ = (bit_ + 7) & ~uint64_t(7); }
    uint64_t bits_left() const { return uint64_t(size_) * 8 - bit_; }
    std::size_t byte_position() const { return std::size_t(bit_ >> 3); }

private:
    const uint8_t* data_;
    std::size_t size_;
    uint64_t bit_ = 0;
};

uint8_t crc8(const uint8_t* p, std::size_t n) {
    uint8_t crc = 0;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= p[i];
        for (int b = 0; b < 8; ++b) crc = uint8_t((crc & 0x80) ? (crc << 1) ^ 0x07 : crc << 1);
    }
    return crc;
}

uint16_t crc16(const uint8_t* p, std::size_t n) {
    uint16_t crc = 0;
    for (std::size_t i = 0; i < n; ++i) {
        crc ^= uint16_t(p[i] << 8);
        for (int b = 0; b < 8; ++b) crc = uint16_t((crc & 0x8000) ? (crc << 1) ^ 0x8005 : crc << 1);
    }
    return crc;
}

struct StreamInfo {
    int sample_rate = 0;
    int channels = 0;
    int bits = 0;
    uint64_t total_samples = 0;  // 0: unknown
    int max_block = 0;
};

// The ID3v2 tag some tools put before "fLaC": 10 bytes of header, then a syncsafe size.
std::size_t id3_size(const uint8_t* data, std::size_t size) {
    if (size < 10 || std::memcmp(data, "ID3", 3) != 0) return 0;
    for (int i = 6; i < 10; ++i)
        if (data[i] & 0x80) return 0;
    const std::size_t body = (std::size_t(data[6]) << 21) | (std::size_t(data[7]) << 14) |
                             (std::size_t(data[8]) << 7) | std::size_t(data[9]);
    return 10 + body + ((data[5] & 0x10) ? 10 : 0);
}

// Parses the metadata blocks; returns the offset of the first frame.
std::size_t parse_metadata(const uint8_t* data, std::size_t size, StreamInfo& info) {
    std::size_t pos = id3_size(data, size);
    check(pos + 4 <= size && std::memcmp(data + pos, "fLaC", 4) == 0,
          "FLAC: not a FLAC stream (it must start with 'fLaC')");
    pos += 4;
    bool first = true, last = false;
    while (!last) {
        check(pos + 4 <= size, "FLAC: truncated metadata block header at byte " + std::to_string(pos));
        const int type = data[pos] & 0x7F;
        last = (data[pos] & 0x80) != 0;
        const std::size_t length = (std::size_t(data[pos + 1]) << 16) | (std::size_t(data[pos + 2]) << 8) | data[pos + 3];
        pos += 4;
        check(length <= size - pos, "FLAC: truncated metadata block (" + std::to_string(length) + " bytes declared, " +
                                        std::to_string(size - pos) + " present)");
        check(type != 127, "FLAC: invalid metadata block type 127");
        if (first) {
            check(type == 0, "FLAC: the first metadata block is not STREAMINFO");
            check(length >= kStreamInfoSize, "FLAC: STREAMINFO of " + std::to_string(length) + " bytes (34 needed)");
            BitReader r(data + pos, length);
            const int min_block = int(r.bits(16));
            info.max_block = int(r.bits(16));
            r.bits(48);  // minimum and maximum frame sizes
            info.sample_rate = int(r.bits(20));
            info.channels = int(r.bits(3)) + 1;
            info.bits = int(r.bits(5)) + 1;
            info.total_samples = r.bits(36);
            check(min_block >= 16 && info.max_block >= min_block,
                  "FLAC: STREAMINFO block sizes " + std::to_string(min_block) + ".." + std::to_string(info.max_block) +
                      " are invalid");
            check(info.sample_rate > 0, "FLAC: STREAMINFO sample rate 0");
            check(info.bits >= 4, "FLAC: " + std::to_string(info.bits) + " bits per sample (4..32 are read)");
        } else {
            check(type != 0, "FLAC: a second STREAMINFO block");
        }
        first = false;
        pos += length;
    }
    return pos;
}

struct FrameHeader {
    int block_size = 0;
    int sample_rate = 0;  // 0: STREAMINFO's
    int channel_assignment = 0;
    int bits = 0;  // 0: STREAMINFO's
};

FrameHeader parse_frame_header(BitReader& r, const uint8_t* frame_start, const StreamInfo& info) {
    check(r.bits(15) == 0x7FFC, "FLAC: lost frame sync (corrupt data or not a frame)");
    r.bits(1);  // blocking strategy: the sample or frame number below is read, not used
    const int block_code = int(r.bits(4)), rate_code = int(r.bits(4));
    FrameHeader h;
    h.channel_assignment = int(r.bits(4));
    const int size_code = int(r.bits(3));
    check(r.bits(1) == 0, "FLAC: reserved frame header bit set");
    // The frame or sample number, UTF-8-style in 1..7 bytes.
    const uint64_t lead = r.bits(8);
    int extra = 0;
    if (lead >= 0x80) {
        check(lead >= 0xC0 && lead != 0xFF, "FLAC: corrupt frame number");
        for (uint64_t m = 0x40; lead & m; m >>= 1) ++extra;
        for (int i = 0; i < extra; ++i) check((r.bits(8) & 0xC0) == 0x80, "FLAC: corrupt frame number");
    }
    check(block_code != 0, "FLAC: reserved block size code 0");
    if (block_code == 1) h.block_size = 192;
    else if (block_code <= 5) h.block_size = 576 << (block_code - 2);
    else if (block_code == 6) h.block_size = int(r.bits(8)) + 1;
    else if (block_code == 7) h.block_size = int(r.bits(16)) + 1;
    else h.block_size = 256 << (block_code - 8);
    static constexpr int kRates[12] = {0, 88200, 176400, 192000, 8000, 16000, 22050, 24000, 32000, 44100, 48000, 96000};
    check(rate_code != 15, "FLAC: invalid sample rate code 15");
    if (rate_code < 12) h.sample_rate = kRates[rate_code];
    else if (rate_code == 12) h.sample_rate = int(r.bits(8)) * 1000;
    else if (rate_code == 13) h.sample_rate = int(r.bits(16));
    else h.sample_rate = int(r.bits(16)) * 10;
    static constexpr int kBits[8] = {0, 8, 12, -1, 16, 20, 24, 32};
    h.bits = kBits[size_code];
    check(h.bits >= 0, "FLAC: reserved sample size code 3");
    const std::size_t header_bytes = r.byte_position();
    const uint8_t crc = uint8_t(r.bits(8));
    check(crc8(frame_start, header_bytes) == crc, "FLAC: frame header CRC mismatch (corrupt data)");

    check(h.channel_assignment <= 10, "FLAC: reserved channel assignment " + std::to_string(h.channel_assignment));
    const int channels = h.channel_assignment < 8 ? h.channel_assignment + 1 : 2;
    check(channels == info.channels, "FLAC: a frame of " + std::to_string(channels) + " channels in a stream of " +
                                         std::to_string(info.channels));
    check(h.sample_rate == 0 || h.sample_rate == info.sample_rate,
          "FLAC: a frame at " + std::to_string(h.sample_rate) + " Hz in a stream at " + std::to_string(info.sample_rate));
    check(h.bits == 0 || h.bits == info.bits, "FLAC: a frame of " + std::to_string(h.bits) + "-bit samples in a " +
                                                  std::to_string(info.bits) + "-bit stream");
    check(h.block_size <= info.max_block || info.max_block == 0,
          "FLAC: a block of " + std::to_string(h.block_size) + " samples, over STREAMINFO's " +
              std::to_string(info.max_block));
    return h;
}

// Refuses a sample outside `bits` signed bits, which only corrupt data produces.
void check_range(int64_t v, int bits) {
    const int64_t limit = int64_t(1) << (bits - 1);
    if (v < -limit || v >= limit)
        fail("FLAC: a decoded sample does not fit its " + std::to_string(bits) + " bits (corrupt data)");
}

// The residual of samples [order, n) into out[order..n).
void read_residual(BitReader& r, int n, int order, int64_t* out) {
    const int method = int(r.bits(2));
    check(method <= 1, "FLAC: reserved residual coding method " + std::to_string(method));
    const int param_bits = method == 0 ? 4 : 5, escape = method == 0 ? 15 : 31;
    const int partition_order = int(r.bits(4));
    const int partitions = 1 << partition_order;
    check(n % partitions == 0 && (n >> partition_order) >= order,
          "FLAC: residual partition order " + std::to_string(partition_order) + " does not fit a block of " +
              std::to_string(n) + " with predictor order " + std::to_string(order));
    const int per_partition = n >> partition_order;
    // Residuals are bounded by what a valid stream can hold; the range check after prediction catches the rest.
    const uint64_t max_quotient = (uint64_t(1) << 34);
    int i = order;
    for (int p = 0; p < partitions; ++p) {
        const int count = p == 0 ? per_partition - order : per_partition;
        const int k = int(r.bits(param_bits));
        if (k == escape) {
            const int raw = int(r.bits(5));
            for (int j = 0; j < count; ++j, ++i) out[i] = raw == 0 ? 0 : r.signed_bits(raw);
            continue;
        }
        for (int j = 0; j < count; ++j, ++i) {
            const uint64_t q = r.unary(max_quotient >> k);
            const uint64_t v = (q << k) | (k ? r.bits(k) : 0);
            out[i] = int64_t(v >> 1) ^ -int64_t(v & 1);
        }
    }
}

void read_subframe(BitReader& r, int n, int bits, int64_t* out) {
    check(r.bits(1) == 0, "FLAC: subframe padding bit set (corrupt data)");
    const int type = int(r.bits(6));
    int wasted = 0;
    if (r.bits(1)) wasted = int(r.unary(uint64_t(bits))) + 1;
    check(wasted < bits, "FLAC: " + std::to_string(wasted) + " wasted bits in " + std::to_string(bits) + "-bit samples");
    bits -= wasted;
    if (type == 0) {
        const int64_t v = r.signed_bits(bits);
        for (int i = 0; i < n; ++i) out[i] = v;
    } else if (type == 1) {
        for (int i = 0; i < n; ++i) out[i] = r.signed_bits(bits);
    } else if (type >= 8 && type <= 12) {
        const int order = type - 8;
        check(order <= n, "FLAC: fixed predictor order " + std::to_string(order) + " in a block of " + std::to_string(n));
        for (int i = 0; i < order; ++i) out[i] = r.signed_bits(bits);
        read_residual(r, n, order, out);
        static constexpr int kFixed[5][4] = {{0, 0, 0, 0}, {1, 0, 0, 0}, {2, -1, 0, 0}, {3, -3, 1, 0}, {4, -6, 4, -1}};
        for (int i = order; i < n; ++i) {
            int64_t prediction = 0;
            for (int j = 0; j < order; ++j) prediction += kFixed[order][j] * out[i - 1 - j];
            out[i] += prediction;
            check_range(out[i], bits);
        }
    } else if (type >= 32) {
        const int order = type - 31;
        check(order <= n, "FLAC: LPC order " + std::to_string(order) + " in a block of " + std::to_string(n));
        for (int i = 0; i < order; ++i) out[i] = r.signed_bits(bits);
        const int precision = int(r.bits(4)) + 1;
        check(precision <= 15, "FLAC: invalid LPC coefficient precision");
        const int shift = int(r.signed_bits(5));
        check(shift >= 0, "FLAC: negative LPC shift " + std::to_string(shift));
        std::array<int64_t, kMaxLpcOrder> coefficients{};
        for (int j = 0; j < order; ++j) coefficients[j] = r.signed_bits(precision);
        read_residual(r, n, order, out);
        for (int i = order; i < n; ++i) {
            int64_t sum = 0;
            for (int j = 0; j < order; ++j) sum += coefficients[j] * out[i - 1 - j];
            out[i] += sum >> shift;
            check_range(out[i], bits);
        }
    } else {
        fail("FLAC: reserved subframe type " + std::to_string(type));
    }
    if (wasted)
        for (int i = 0; i < n; ++i) out[i] = int64_t(uint64_t(out[i]) << wasted);
}


}  // namespace

bool looks_like_flac(const uint8_t* data, std::size_t size) {
    const std::size_t pos = id3_size(data, size);
    return pos + 4 <= size && std::memcmp(data + pos, "fLaC", 4) == 0;
}

Audio parse_flac(const uint8_t* data, std::size_t size, std::size_t max_samples) {
    StreamInfo info;
    std::size_t pos = parse_metadata(data, size, info);
    check(info.total_samples <= max_samples,
          "FLAC: " + std::to_string(info.total_samples) + " samples per channel, more than the " +
              std::to_string(max_samples) + " read");
    const double scale = 1.0 / double(uint64_t(1) << (info.bits - 1));
    Audio audio;
    audio.sample_rate = info.sample_rate;
    audio.channels = info.channels;
    audio.encoding = "flac" + std::to_string(info.bits);
    // STREAMINFO's count is only a claim: a few header bytes must not reserve hundreds of MiB.
    constexpr uint64_t kMaxReserve = uint64_t(1) << 20;
    audio.samples.reserve(std::size_t(std::min(info.total_samples * uint64_t(info.channels), kMaxReserve)));
    std::array<std::vector<int64_t>, kMaxChannels> channel;
    while (pos < size) {
        // An ID3v1 tag may close the file.
        if (size - pos == 128 && std::memcmp(data + pos, "TAG", 3) == 0) break;
        const uint8_t* frame = data + pos;
        BitReader r(frame, size - pos);
        const FrameHeader h = parse_frame_header(r, frame, info);
        const int n = h.block_size;
        check(audio.samples.size() + std::size_t(n) <= max_samples,
              "FLAC: more than " + std::to_string(max_samples) + " samples per channel");
        for (int c = 0; c < info.channels; ++c) {
            // The side channel carries one bit more than the others.
            const bool side = (h.channel_assignment == 8 && c == 1) || (h.channel_assignment == 9 && c == 0) ||
                              (h.channel_assignment == 10 && c == 1);
            channel[c].resize(std::size_t(n));
            read_subframe(r, n, info.bits + (side ? 1 : 0), channel[c].data());
        }
        r.align();
        const std::size_t frame_bytes = r.byte_position();
        const uint16_t crc = uint16_t(r.bits(16));
        check(crc16(frame, frame_bytes) == crc, "FLAC: frame CRC mismatch at byte " + std::to_string(pos) +
                                                    " (corrupt data)");
        int64_t* a = channel[0].data();
        int64_t* b = info.channels > 1 ? channel[1].data() : nullptr;
        for (int i = 0; i < n; ++i) {
            switch (h.channel_assignment) {
                case 8: b[i] = a[i] - b[i]; break;  // left, side = left - right
                case 9: a[i] = a[i] + b[i]; break;  // side, right
                case 10: {                          // mid, side
                    const int64_t mid = int64_t(uint64_t(a[i]) << 1) | (b[i] & 1);
                    a[i] = (mid + b[i]) >> 1;
                    b[i] = (mid - b[i]) >> 1;
                    break;
                }
                default: break;
            }
            double sum = 0;
            for (int c = 0; c < info.channels; ++c) {
                check_range(channel[c][std::size_t(i)], info.bits);
                sum += double(channel[c][std::size_t(i)]) * scale;
            }
            audio.samples.push_back(float(info.channels == 1 ? sum : sum / info.channels));
        }
        pos += frame_bytes + 2;
    }
    check(info.total_samples == 0 || audio.samples.size() == info.total_samples,
          "FLAC: truncated stream (" + std::to_string(audio.samples.size()) + " of " +
              std::to_string(info.total_samples) + " samples per channel present)");
    check(!audio.samples.empty() || info.total_samples == 0, "FLAC: no audio frames");
    return audio;
}

Audio parse_audio(const uint8_t* data, std::size_t size) {
    if (looks_like_flac(data, size)) return parse_flac(data, size);
    if (looks_like_wav(data, size) || (size >= 4 && (std::memcmp(data, "RF64", 4) == 0 || std::memcmp(data, "RIFX", 4) == 0)))
        return parse_wav(data, size);
    fail("not a WAV or FLAC file (" + std::to_string(size) + " bytes that start like neither)");
}

Audio read_audio(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    check(bool(in), "cannot open " + path);
    const std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    try {
        return parse_audio(bytes.data(), bytes.size());
    } catch (const Error& e) {
        fail(path + ": " + e.what());
    }
}

}  // namespace attnlab::audio
