#pragma once
// What every C++ benchmark prints about the processor it ran on (natively and under Node, which reads the same
// /proc and /sys): results on one CPU do not carry to another (docs/performance.md).
#include <fstream>
#include <string>

namespace attnlab::bench {

// "model name (L1d 48K, L2 2048K, L3 262144K)" from /proc/cpuinfo and cpu0's cache directories; "unknown" where
// they cannot be read.
inline std::string cpu_description() {
    std::string model = "unknown";
    std::ifstream cpuinfo("/proc/cpuinfo");
    for (std::string line; std::getline(cpuinfo, line);) {
        if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
            model = line.substr(line.find(':') + 2);
            break;
        }
    }
    std::string caches;
    for (int index = 0; index < 8; ++index) {
        const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(index) + "/";
        std::ifstream level_file(dir + "level"), type_file(dir + "type"), size_file(dir + "size");
        std::string level, type, size;
        if (!(level_file >> level && type_file >> type && size_file >> size)) break;
        if (type == "Instruction") continue;
        caches += (caches.empty() ? "" : ", ") + std::string("L") + level + (type == "Data" ? "d" : "") + " " + size;
    }
    return caches.empty() ? model : model + " (" + caches + ")";
}

// A string's JSON body (quotes and backslashes escaped, control characters dropped).
inline std::string json_escape(const std::string& text) {
    std::string out;
    for (char ch : text) {
        if (ch == '"' || ch == '\\') out += '\\';
        if (static_cast<unsigned char>(ch) >= 0x20) out += ch;
    }
    return out;
}

}  // namespace attnlab::bench
