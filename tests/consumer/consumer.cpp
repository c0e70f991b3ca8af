// Translate a sentence, caption an image file and print where each output word looked.
//   example translate MODEL.gguf "A dog runs on the beach."
//   example caption MODEL.gguf photo.jpg
#include <attnlab/attnlab.hpp>

#include <cstdio>
#include <string>
#include <vector>

// One line per output token: the token, then its attention weights (one per source token or grid cell).
static void print_attention(const std::vector<std::string>& tokens, const std::vector<float>& attention,
                            std::size_t columns) {
    for (std::size_t t = 0; t < tokens.size(); ++t) {
        std::printf("attention\t%s\t", tokens[t].c_str());
        for (std::size_t c = 0; c < columns; ++c) std::printf(c ? " %.9g" : "%.9g", attention[t * columns + c]);
        std::printf("\n");
    }
}

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s translate MODEL TEXT | caption MODEL IMAGE\n", argv[0]);
        return 2;
    }
    const std::string command = argv[1];
    try {
        const attnlab::Model model = attnlab::Model::open(argv[2]);
        std::printf("engine\t%s (%s)\n", attnlab::engine_info().version.c_str(), attnlab::engine_info().simd.c_str());
        if (command == "translate") {
            attnlab::TranslateOptions options;
            options.beam = 4;
            const attnlab::Translation t = model.translate(argv[3], options);
            std::printf("text\t%s\n", t.text.c_str());
            // attention is [target tokens x source tokens], row-major.
            print_attention(t.target_tokens, t.attention, t.source_tokens.size());
        } else if (command == "caption") {
            const attnlab::Image image = attnlab::read_image(argv[3]);  // JPEG or PNG -> RGBA
            const attnlab::Caption c = model.caption(image);
            std::printf("text\t%s\n", c.text.c_str());
            // attention is [tokens x grid cells]; cell y * grid_width + x covers that part of the photo.
            print_attention(c.tokens, c.attention, std::size_t(c.grid_height) * c.grid_width);
        } else {
            std::fprintf(stderr, "unknown command %s\n", command.c_str());
            return 2;
        }
    } catch (const attnlab::Error& e) {  // a bad model file, input or option: a message meant for a person
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
    return 0;
}
