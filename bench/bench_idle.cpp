// What idling costs this machine's cores: after a sleep of --pause-ms, the time of a first and a second pass reading
// a buffer of --mb megabytes, and of a fixed stretch of arithmetic before and after them, against the same with no
// sleep. On a virtual machine an idle virtual CPU can lose its core's caches to other guests; the paragraph
// benchmark leaves idle gaps between paragraphs (docs/performance.md, "The engine alone and the page around it").
//
//   bench_idle [--mb 1] [--pause-ms 100] [--rounds 40]
//
// Prints the CPU and, for no pause and for the pause, the median microseconds of each part; the LAST line is one
// JSON object {"cpu", "mb", "pause_ms", "back_to_back": {...}, "after_pause": {...}}.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "cpu_description.hpp"

namespace {

using Clock = std::chrono::steady_clock;

volatile float sink;

double microseconds_since(Clock::time_point t0) {
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// One float per 64-byte line: the pass costs what bringing the lines in costs.
double read_pass(const std::vector<float>& buffer) {
    const auto t0 = Clock::now();
    float sum = 0;
    for (std::size_t i = 0; i < buffer.size(); i += 16) sum += buffer[i];
    sink = sum;
    return microseconds_since(t0);
}

double arithmetic() {
    const auto t0 = Clock::now();
    float a = 1;
    for (int i = 0; i < 200000; ++i) a = a * 1.0000001f + 1e-9f;
    sink = a;
    return microseconds_since(t0);
}

double median(std::vector<double> xs) {
    std::sort(xs.begin(), xs.end());
    return xs[xs.size() / 2];
}

struct Parts {
    double arithmetic_before, first_pass, second_pass, arithmetic_after;
};

Parts measure(const std::vector<float>& buffer, int pause_ms, int rounds) {
    std::vector<double> before, first, second, after;
    for (int r = 0; r < rounds; ++r) {
        std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
        before.push_back(arithmetic());
        first.push_back(read_pass(buffer));
        second.push_back(read_pass(buffer));
        after.push_back(arithmetic());
    }
    return {median(before), median(first), median(second), median(after)};
}

std::string json(const Parts& p) {
    char text[200];
    std::snprintf(text, sizeof text,
                  "{\"arithmetic_before_us\":%.1f,\"first_pass_us\":%.1f,\"second_pass_us\":%.1f,"
                  "\"arithmetic_after_us\":%.1f}",
                  p.arithmetic_before, p.first_pass, p.second_pass, p.arithmetic_after);
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    int mb = 1, pause_ms = 100, rounds = 40;
    for (int i = 1; i < argc; i += 2) {
        const std::string flag = argv[i];
        if (i + 1 == argc) {
            std::fprintf(stderr, "bench_idle: %s needs a value\n", flag.c_str());
            return 1;
        }
        const int value = std::atoi(argv[i + 1]);
        if (flag == "--mb") mb = value;
        else if (flag == "--pause-ms") pause_ms = value;
        else if (flag == "--rounds") rounds = value;
        else {
            std::fprintf(stderr, "bench_idle: unknown option %s\n", flag.c_str());
            return 1;
        }
    }
    if (mb < 1 || mb > 1024 || pause_ms < 0 || rounds < 1) {
        std::fprintf(stderr, "bench_idle: --mb 1..1024, --pause-ms >= 0, --rounds >= 1\n");
        return 1;
    }
    const std::vector<float> buffer(static_cast<std::size_t>(mb) << 18, 1.0f);
    const Parts back_to_back = measure(buffer, 0, rounds);
    const Parts after_pause = measure(buffer, pause_ms, rounds);
    const std::string cpu = attnlab::bench::cpu_description();
    std::printf("cpu: %s\n%d MB, medians of %d rounds (us): arithmetic before / first pass / second pass / "
                "arithmetic after\n",
                cpu.c_str(), mb, rounds);
    std::printf("  back to back:   %.0f / %.0f / %.0f / %.0f\n", back_to_back.arithmetic_before,
                back_to_back.first_pass, back_to_back.second_pass, back_to_back.arithmetic_after);
    std::printf("  after %d ms:   %.0f / %.0f / %.0f / %.0f\n", pause_ms, after_pause.arithmetic_before,
                after_pause.first_pass, after_pause.second_pass, after_pause.arithmetic_after);
    std::printf("{\"cpu\":\"%s\",\"mb\":%d,\"pause_ms\":%d,\"back_to_back\":%s,\"after_pause\":%s}\n",
                attnlab::bench::json_escape(cpu).c_str(), mb, pause_ms, json(back_to_back).c_str(),
                json(after_pause).c_str());
    return 0;
}
