#pragma once
// Just enough JSON writing for the CLI's --json output.
#include <cstdio>
#include <string>
#include <vector>

namespace attnlab::cli {

inline std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (unsigned char c : s) {
        switch (c) {
            case '"': out += "\\\""; break;
            case '\\': out += "\\\\"; break;
            case '\n': out += "\\n"; break;
            case '\r': out += "\\r"; break;
            case '\t': out += "\\t"; break;
            default:
                if (c < 0x20) {
                    char buffer[8];
                    std::snprintf(buffer, sizeof buffer, "\\u%04x", c);
                    out += buffer;
                } else {
                    out += static_cast<char>(c);
                }
        }
    }
    return out + "\"";
}

inline std::string json_number(float x) {
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.9g", static_cast<double>(x));
    std::string s = buffer;
    if (s == "inf" || s == "-inf" || s == "nan" || s == "-nan") return "null";  // JSON has no infinities
    return s;
}

inline std::string json_strings(const std::vector<std::string>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + json_string(items[i]);
    return out + "]";
}

template <typename T>
std::string json_ints(const std::vector<T>& items) {
    std::string out = "[";
    for (std::size_t i = 0; i < items.size(); ++i) out += (i ? "," : "") + std::to_string(items[i]);
    return out + "]";
}

// A row-major [rows × cols] matrix as nested arrays.
inline std::string json_matrix(const std::vector<float>& values, std::size_t rows, std::size_t cols) {
    std::string out = "[";
    for (std::size_t r = 0; r < rows; ++r) {
        out += r ? ",[" : "[";
        for (std::size_t c = 0; c < cols; ++c) out += (c ? "," : "") + json_number(values[r * cols + c]);
        out += "]";
    }
    return out + "]";
}

}  // namespace attnlab::cli
