// The attnlab command line. Exit status 0 on success, 1 on any error or bad usage (message on stderr).
#include <cstdio>
#include <exception>
#include <string>
#include <vector>

#include "attnlab/attnlab.hpp"
#include "attnlab/error.hpp"

namespace {

constexpr const char* kUsage =
    "usage: attnlab <command> [options]\n"
    "commands:\n"
    "  version               print the engine version and SIMD instruction set\n";

int run_version() {
    const attnlab::EngineInfo info = attnlab::engine_info();
    std::printf("attnlab %s (%s)\n", info.version.c_str(), info.simd.c_str());
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "--help" || args[0] == "-h") {
        std::fputs(kUsage, args.empty() ? stderr : stdout);
        return args.empty() ? 1 : 0;
    }
    try {
        const std::string& command = args[0];
        if (command == "version" || command == "--version") return run_version();
        std::fprintf(stderr, "attnlab: unknown command '%s'\n%s", command.c_str(), kUsage);
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "attnlab: %s\n", e.what());
        return 1;
    }
}
