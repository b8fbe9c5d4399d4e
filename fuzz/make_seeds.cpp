// Writes the seed corpus of fuzz/corpus/ (run by hand; its output is committed), of every target or of
// the targets named:
//     cmake --build build/release --target fuzz_make_seeds && build/release/fuzz/fuzz_make_seeds fuzz/corpus [TARGET...]
// Valid files come from the library itself; the invalid ones are cut or edited from them. (The checkpoints
// written since the metadata has its own checksum would be refused by it once edited: the committed
// checkpoint seeds are from before it, and still reach the checks of the settings they edit; checksummed_*
// are the ones with it.)
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <set>
#include <string>

#include <nn/model_files/safetensors.h>
#include <nn/layers.h>
#include <nn/model_registry.h>
#include <nn/models.h>
#include <nn/model_files/gpt2_weights.h>
#include <nn/model_files/hf_llama.h>
#include <nn/model_files/llama2c.h>
#include <nn/llama.h>
#include <nlohmann/json.hpp>
#include <nn/train/trainer.h>

#include "seed_text.h"

namespace fs = std::filesystem;

namespace {

std::string slurp(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::set<std::string> g_only;  // the targets whose seeds are written (all when empty)

void put(const fs::path& path, const std::string& bytes) {
    if (!g_only.empty() && !g_only.contains(path.parent_path().filename().string())) return;
    fs::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << bytes;
    std::printf("%s (%zu bytes)\n", path.c_str(), bytes.size());
}

// The file with its JSON header replaced by `header` (padded to a multiple of 8), the data unchanged.
std::string with_header(const std::string& file, std::string header) {
    uint64_t old = 0;
    for (int i = 7; i >= 0; --i) old = (old << 8) | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
    while (header.size() % 8) header.push_back(' ');
    std::string out(8, '\0');
    for (size_t i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
    return out + header + file.substr(8 + old);
}

std::string header_of(const std::string& file) {
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(file[static_cast<size_t>(i)]);
    return file.substr(8, n);
}

std::string replaced(std::string s, const std::string& from, const std::string& to) {
    const auto at = s.find(from);
    if (at == std::string::npos) {
        std::fprintf(stderr, "make_seeds: '%s' not found\n", from.c_str());
        std::exit(1);
    }
    return s.replace(at, from.size(), to);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: fuzz_make_seeds CORPUS_DIR [TARGET...]\n");
        return 2;
    }
    const fs::path root = argv[1];
    g_only.insert(argv + 2, argv + argc);
    const fs::path tmp = fs::temp_directory_path() / "tinygpt-make-seeds";
    fs::create_directories(tmp);

    // Weights: a Linear(3, 2) as save_module writes it (the safetensors target loads it into one).
    autograd::Generator gen(7);
    nn::Linear layer(nn::LinearOptions{.in = 3, .out = 2}, gen);
    nn::save_module(tmp / "linear.safetensors", layer, {{"vocabulary", "ab"}});
    const std::string weights = slurp(tmp / "linear.safetensors");
    const fs::path st = root / "safetensors";
    put(st / "valid_linear", weights);
    put(st / "truncated_length", weights.substr(0, 5));
    put(st / "truncated_header", weights.substr(0, 8 + header_of(weights).size() / 2));
    put(st / "truncated_data", weights.substr(0, weights.size() - 4));
    put(st / "header_past_end", std::string("\xff\xff\xff\xff\x00\x00\x00\x00{}      ", 16));
    put(st / "empty_header", std::string("\x08\x00\x00\x00\x00\x00\x00\x00{}      ", 16));
    put(st / "wrong_dtype", with_header(weights, replaced(header_of(weights), "F32", "F16")));
    put(st / "overlapping_offsets", with_header(weights, replaced(header_of(weights), "[24,32]", "[20,28]")));
    // a nameless tensor was accepted, and the fuzz target's own check aborted on it
    put(st / "regression_empty_name", with_header(weights, replaced(header_of(weights), "\"bias\"", "\"\"")));
    put(st / "not_json", with_header(weights, "{\"weight\": [1, 2"));
    put(st / "random_bytes", std::string("\x13\x37\xbe\xef\x00\x01\x02\x03\xde\xad\xc0\xde\x7f\x80\x90\xa0", 16));

    // Training checkpoints: a head model and a bigram trained two steps on kSeedText.
    const fs::path ck = root / "checkpoint";
    const auto tok = nn::CharTokenizer::from_text(fuzz::kSeedText);
    for (const char* kind : {"head", "bigram"}) {
        nn::TrainConfig config;
        config.model.kind = *nn::parse_model_kind(kind);
        config.model.vocab = tok.vocab_size();
        config.model.n_embd = 4;
        config.model.block = 4;
        config.steps = 3;
        config.batch = 2;
        nn::Trainer trainer(config, tok, tok.encode(fuzz::kSeedText));
        trainer.step();
        trainer.step();
        const fs::path path = tmp / (std::string(kind) + ".safetensors");
        trainer.save(path);
        const std::string file = slurp(path);
        put(ck / (std::string("valid_") + kind), file);
        if (std::string(kind) == "head") {
            // The metadata's checksum (crc32c.__metadata__): a checkpoint that has it, and one character of
            // a setting changed under it (refused by the checksum, whatever the setting).
            put(ck / "checksummed_head", file);
            put(ck / "checksummed_setting_edited",
                with_header(file, replaced(header_of(file), "\"model.n_embd\":\"4\"", "\"model.n_embd\":\"8\"")));
            put(ck / "truncated_header", file.substr(0, 8 + header_of(file).size() / 3));
            put(ck / "truncated_data", file.substr(0, file.size() - 16));
            put(ck / "weights_only", weights);
        }
    }
    // Metadata edited on a real checkpoint: sizes that disagree with the tensors, absurd or negative sizes,
    // another model kind.
    const std::string head = slurp(tmp / "head.safetensors");
    const std::string h = header_of(head);
    put(ck / "n_embd_disagrees", with_header(head, replaced(h, "\"model.n_embd\":\"4\"", "\"model.n_embd\":\"8\"")));
    put(ck / "regression_n_embd_huge",
        with_header(head, replaced(h, "\"model.n_embd\":\"4\"", "\"model.n_embd\":\"99999999999\"")));
    put(ck / "block_negative", with_header(head, replaced(h, "\"model.block\":\"4\"", "\"model.block\":\"-4\"")));
    put(ck / "kind_gpt", with_header(head, replaced(h, "\"model.kind\":\"head\"", "\"model.kind\":\"gpt\"")));
    // A run id (train --report's link from the page to the run), a good one and one that is not an id.
    put(ck / "run_id", with_header(head, replaced(h, "\"model.kind\":\"head\"",
                                                  "\"model.kind\":\"head\",\"run.id\":\"0123456789abcdef\"")));
    put(ck / "run_id_not_an_id", with_header(head, replaced(h, "\"model.kind\":\"head\"",
                                                            "\"model.kind\":\"head\",\"run.id\":\"a\\n</script>\"")));
    // Negative sizes reached the memory estimate before any check (a fuzzer finding); a bigram's n_embd and
    // block are checked by nothing else.
    const std::string bigram = slurp(tmp / "bigram.safetensors");
    const std::string hb = header_of(bigram);
    put(ck / "regression_bigram_n_embd_negative",
        with_header(bigram, replaced(hb, "\"model.n_embd\":\"4\"", "\"model.n_embd\":\"-4000\"")));
    put(ck / "regression_bigram_block_negative",
        with_header(bigram, replaced(hb, "\"model.block\":\"4\"", "\"model.block\":\"-4000\"")));

    // Run settings past their flags' limits (issue 25: an evaluation of 4e9 batches, a sample of 1e11
    // characters, a run of 2^64 - 1 steps were accepted), and a vocabulary shorter than the model's.
    put(ck / "regression_eval_iters_4e9",
        with_header(head, replaced(h, "\"run.eval_iters\":\"200\"", "\"run.eval_iters\":\"4000000000\"")));
    put(ck / "regression_sample_1e11",
        with_header(head, replaced(h, "\"run.sample\":\"200\"", "\"run.sample\":\"99999999999\"")));
    put(ck / "regression_steps_max",
        with_header(head, replaced(h, "\"train.steps\":\"3\"", "\"train.steps\":\"18446744073709551615\"")));
    {  // the vocabulary's first character dropped (one JSON escape, "\n", is two bytes, "\u000a" six)
        const std::string key = "\"tokenizer.vocabulary\":\"";
        std::string edited = h;
        const size_t at = edited.find(key) + key.size();
        edited.erase(at, edited[at] != '\\' ? 1 : edited[at + 1] == 'u' ? 6 : 2);
        put(ck / "regression_vocabulary_short", with_header(head, edited));
    }
    // Neither a checkpoint nor llm.c's file (they were taken for a safetensors file with a bad header):
    // random bytes, and llm.c's 256-int32 header with the magic one off (20240327).
    put(ck / "neither_random_bytes",
        std::string("\x13\x37\xbe\xef\x00\x01\x02\x03\xde\xad\xc0\xde\x7f\x80\x90\xa0", 16));
    {
        std::string llmc(1024, '\0');
        const int32_t fields[8] = {20240327, 3, 4, 8, 1, 1, 4, 128};  // magic, version, maxT, V, L, NH, C, padded V
        for (size_t i = 0; i < 32; ++i)
            llmc[i] = static_cast<char>((static_cast<uint32_t>(fields[i / 4]) >> (8 * (i % 4))) & 0xff);
        put(ck / "neither_llmc_other_magic", llmc);
    }

    const fs::path tk = root / "tokenizer";
    put(tk / "ascii", "hello world\n");
    put(tk / "utf8", "na\xc3\xafve caf\xc3\xa9 \xe2\x9c\x93 \xf0\x9f\x99\x82");
    put(tk / "invalid_continuation", "ab\xc3(cd");
    put(tk / "overlong", "\xc0\xaf");
    put(tk / "surrogate", "\xed\xa0\x80");
    put(tk / "truncated_4byte", "x\xf0\x9f\x99");
    put(tk / "nul_byte", std::string("a\0b", 3));
    put(tk / "above_max", "\xf4\x90\x80\x80");

    const fs::path ta = root / "train_args";
    auto args = [](std::initializer_list<std::string> list) {
        std::string out;
        for (const auto& a : list) out += a + std::string(1, '\0');
        return out;
    };
    put(ta / "gpt", args({"--model", "gpt", "--n-embd", "16", "--n-head", "2", "--steps", "10", "--lr", "3e-4"}));
    put(ta / "resume", args({"--resume", "run.safetensors", "--until", "5", "--json"}));
    put(ta / "help", args({"--help"}));
    put(ta / "missing_value", args({"--steps"}));
    put(ta / "not_dividing", args({"--model", "multihead", "--n-embd", "10", "--n-head", "3"}));
    put(ta / "nan", args({"--dropout", "nan", "--temperature", "inf"}));
    put(ta / "huge", args({"--steps", "99999999999999999999999", "--seed", "-1"}));
    put(ta / "resume_and_lr", args({"--resume", "x", "--lr", "0.1"}));
    put(ta / "hex_float", args({"--lr", "0x1p-3", "--min-lr", "1e-400", "--top-k", "0"}));
    put(ta / "betas", args({"--beta1", "0.999999999", "--beta2", "0.95"}));  // 1 as a float
    // model_files: the first byte chooses the file (0 config.json beside a GPT-2's weights, 1 a token file,
    // 2 a .bin model file), the rest is the file.
    const fs::path mf = root / "model_files";
    const auto config = [&](const char* name, const std::string& text) { put(mf / name, std::string(1, '\0') + text); };
    config(
        "config_gpt2",
        R"({"n_head": 2, "n_embd": 8, "n_layer": 1, "vocab_size": 5, "n_positions": 4, "activation_function": "gelu_new", )"
        R"("task_specific_params": {"text-generation": {"do_sample": true, "max_length": 50}}})");
    config("config_heads_not_dividing", R"({"n_head": 3})");
    config("config_n_embd_disagrees", R"({"n_head": 2, "n_embd": 16})");
    config("config_nested_17_deep", "{\"n_head\": 2, \"x\": " + std::string(16, '[') + std::string(16, ']') + "}");
    config("config_nested_objects", std::string(40, '{').insert(1, "\"a\":") + "}");
    config("config_not_utf8", "{\"n_head\": 2, \"activation_function\": \"\xff\x1b[31m\"}");
    config("config_not_json", "{\"n_head\": 2,");
    // 100,000 deep: the message's dump of the value recursed until the stack ran out (SIGSEGV)
    config("regression_config_nested_100000",
           "{\"n_head\": 2, \"n_embd\": " + std::string(100000, '[') + std::string(100000, ']') + "}");
    const auto tokens = [&](const char* name, const std::string& bytes) {
        put(mf / name, std::string(1, '\1') + bytes);
    };
    const auto le32 = [](std::initializer_list<int32_t> values, size_t count) {
        std::string out(4 * count, '\0');
        size_t i = 0;
        for (int32_t v : values) std::memcpy(out.data() + 4 * i++, &v, 4);
        return out;
    };
    const std::string ids("\x01\x00\x02\x00\x2b\x01\x04\x00", 8);  // 1, 2, 299, 4
    tokens("tokens_nanogpt", ids);
    tokens("tokens_llmc", le32({20240520, 1, 4}, 256) + ids);
    tokens("tokens_llmc_count_long", le32({20240520, 1, 40}, 256) + ids);
    tokens("tokens_id_past_vocabulary", ids + std::string("\x2c\x01", 2));  // 300
    tokens("tokens_llmc_model_magic", le32({20240326, 3, 4}, 256));
    tokens("tokens_odd_size", ids + "x");
    {  // llm.c's model file of the config_gpt2 model (its vocabulary padded to 128 rows), and damaged
        nn::ModelConfig c;
        c.kind = nn::ModelKind::gpt2;
        c.vocab = 5, c.n_embd = 8, c.n_head = 2, c.n_layer = 1, c.block = 4;
        nn::write_llmc_gpt2(tmp / "model.bin", c, nn::make_model(c, gen)->named_parameters());
        const std::string model = slurp(tmp / "model.bin");
        put(mf / "llmc_model", std::string(1, '\2') + model);
        put(mf / "llmc_model_truncated", std::string(1, '\2') + model.substr(0, model.size() - 12));
        put(mf / "llmc_model_heads_not_dividing",
            std::string(1, '\2') + le32({20240326, 3, 4, 5, 1, 3, 8, 128}, 256) + model.substr(1024));
        put(mf / "llmc_model_bad_magic",
            std::string(1, '\2') + le32({20240327, 3, 4, 5, 1, 2, 8, 128}, 256) + model.substr(1024));
    }
    // llama_files: the first byte chooses the file (0 a llama2.c model file, 1 llama2.c's tokenizer.bin,
    // 2 config.json beside a tiny Llama's model.safetensors, 3 a tokenizer.json), the rest is the file.
    const fs::path lf = root / "llama_files";
    {
        const nn::LlamaOptions tiny{
            .vocab = 6, .n_embd = 8, .n_head = 2, .n_kv_head = 1, .n_layer = 1, .ffn_hidden = 4, .block = 4};
        nn::Llama model(tiny, gen);
        for (const auto& [name, version] : {std::pair{"llama2c_legacy", nn::Llama2cVersion::legacy},
                                            std::pair{"llama2c_v1", nn::Llama2cVersion::v1}}) {
            nn::write_llama2c(
                tmp / "model.bin",
                {.config = nn::llama2c_config(tiny), .tensors = model.named_parameters(), .legacy_rope_tables = {}},
                version);
            const std::string file = slurp(tmp / "model.bin");
            put(lf / name, std::string(1, '\0') + file);
            put(lf / (std::string(name) + "_truncated"), std::string(1, '\0') + file.substr(0, file.size() - 6));
            put(lf / (std::string(name) + "_longer"), std::string(1, '\0') + file + "xyzw");
        }
        const std::string body =
            slurp(tmp / "model.bin").substr(256);  // the v1 body: sizes the headers below disagree with
        const auto int32s = [](std::initializer_list<int32_t> values) {
            std::string out(4 * values.size(), '\0');
            size_t i = 0;
            for (int32_t v : values) std::memcpy(out.data() + 4 * i++, &v, 4);
            return out;
        };
        // legacy headers: n_kv_heads 3 not dividing 2 heads; an odd head size; a huge dim the size cannot back
        put(lf / "llama2c_kv_not_dividing", std::string(1, '\0') + int32s({8, 4, 1, 2, 3, 6, 4}) + body);
        put(lf / "llama2c_odd_head", std::string(1, '\0') + int32s({6, 4, 1, 2, 1, 6, 4}) + body);
        put(lf / "llama2c_huge_dim", std::string(1, '\0') + int32s({1 << 30, 1 << 30, 1 << 20, 2, 1, -6, 1 << 20}));
        // tokenizer.bin: <unk>, <s>, </s>, the 256 byte tokens, then " ", "a", " a" with their scores
        std::string tokens_bin = int32s({8});
        const auto token = [&](float score, const std::string& text) {
            tokens_bin.append(reinterpret_cast<const char*>(&score), 4);
            tokens_bin += int32s({static_cast<int32_t>(text.size())}) + text;
        };
        token(0, "<unk>");
        token(0, "\n<s>\n");
        token(0, "\n</s>\n");
        for (int b = 0; b < 256; ++b) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "<0x%02X>", b);
            token(0, hex);
        }
        token(-1, " ");
        token(-2, "a");
        token(-0.5f, " a");
        put(lf / "tokenizer_bin", std::string(1, '\1') + tokens_bin);
        put(lf / "tokenizer_bin_truncated", std::string(1, '\1') + tokens_bin.substr(0, tokens_bin.size() - 2));
        std::string nan_score = tokens_bin;
        const float nan = std::numeric_limits<float>::quiet_NaN();
        std::memcpy(nan_score.data() + 4, &nan, 4);
        put(lf / "tokenizer_bin_nan_score", std::string(1, '\1') + nan_score);
        put(lf / "tokenizer_bin_long_token", std::string(1, '\1') + int32s({2}) + tokens_bin.substr(4));
        // config.json: the tiny model's own, then broken by a field each
        nn::write_hf_llama(tmp / "hf", {.config = tiny,
                                        .bos_token_id = std::nullopt,
                                        .eos_token_id = std::nullopt,
                                        .tensors = model.named_parameters(),
                                        .notes = {}});
        const nlohmann::json llama_config = nlohmann::json::parse(slurp(tmp / "hf" / "config.json"));
        put(lf / "config_valid", std::string(1, '\2') + llama_config.dump());
        const auto edited = [&](const char* name, const char* key, const nlohmann::json& value) {
            nlohmann::json c = llama_config;
            c[key] = value;
            put(lf / name, std::string(1, '\2') + c.dump());
        };
        edited("config_rope_scaling", "rope_scaling", {{"type", "linear"}, {"factor", 2.0}});
        edited("config_kv_not_dividing", "num_key_value_heads", 3);
        edited("config_vocab_zero", "vocab_size", 0);
        edited("config_huge_layers", "num_hidden_layers", int64_t{1} << 40);
        edited("config_model_type_gpt2", "model_type", "gpt2");
        put(lf / "config_not_json", std::string(1, '\2') + llama_config.dump().substr(0, 40));
        // tokenizer.json: byte-level, the 256 stand-ins numbered as GPT-2 numbers its bytes,
        // a merge, an added token; and SentencePiece-style with byte fallback and <s>
        nlohmann::json vocab = nlohmann::json::object();
        int next = 256;
        for (int b = 0; b < 256; ++b) {
            const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            const int c = printable ? b : next++;
            std::string u;
            if (c < 0x80) u.push_back(static_cast<char>(c));
            else {
                u.push_back(static_cast<char>(0xC0 | (c >> 6)));
                u.push_back(static_cast<char>(0x80 | (c & 0x3F)));
            }
            vocab[u] = b;
        }
        vocab["\xC4\xA0t"] = 256;  // "Ġt"
        const nlohmann::json byte_level = {
            {"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens",
             {{{"id", 257},
               {"content", "<|endoftext|>"},
               {"single_word", false},
               {"lstrip", false},
               {"rstrip", false},
               {"normalized", false},
               {"special", true}}}},
            {"normalizer", nullptr},
            {"pre_tokenizer",
             {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", true}, {"use_regex", true}}},
            {"post_processor", nullptr},
            {"decoder",
             {{"type", "ByteLevel"}, {"add_prefix_space", true}, {"trim_offsets", true}, {"use_regex", true}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", nullptr},
              {"continuing_subword_prefix", ""},
              {"end_of_word_suffix", ""},
              {"fuse_unk", false},
              {"byte_fallback", false},
              {"vocab", vocab},
              {"merges", {"\xC4\xA0 t"}}}}};
        put(lf / "tokenizer_json_byte_level", std::string(1, '\3') + byte_level.dump());
        nlohmann::json sp_vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
        for (int b = 0; b < 256; ++b) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "<0x%02X>", b);
            sp_vocab[hex] = 3 + b;
        }
        const std::string S = "\xE2\x96\x81";  // ▁
        sp_vocab[S] = 259, sp_vocab["a"] = 260, sp_vocab[S + "a"] = 261;
        const auto added = [](int i, const char* content) {
            return nlohmann::json{{"id", i},         {"content", content},  {"single_word", false}, {"lstrip", false},
                                  {"rstrip", false}, {"normalized", false}, {"special", true}};
        };
        const nlohmann::json sentencepiece = {
            {"version", "1.0"},
            {"truncation", nullptr},
            {"padding", nullptr},
            {"added_tokens", {added(0, "<unk>"), added(1, "<s>"), added(2, "</s>")}},
            {"normalizer",
             {{"type", "Sequence"},
              {"normalizers",
               {{{"type", "Prepend"}, {"prepend", S}},
                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", S}}}}}},
            {"pre_tokenizer", nullptr},
            {"post_processor",
             {{"type", "TemplateProcessing"},
              {"single",
               {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}}, {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}},
              {"pair", nlohmann::json::array()},
              {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}}},
            {"decoder",
             {{"type", "Sequence"},
              {"decoders",
               {{{"type", "Replace"}, {"pattern", {{"String", S}}}, {"content", " "}},
                {{"type", "ByteFallback"}},
                {{"type", "Fuse"}},
                {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}}},
            {"model",
             {{"type", "BPE"},
              {"dropout", nullptr},
              {"unk_token", "<unk>"},
              {"continuing_subword_prefix", nullptr},
              {"end_of_word_suffix", nullptr},
              {"fuse_unk", true},
              {"byte_fallback", true},
              {"vocab", sp_vocab},
              {"merges", {S + " a"}}}}};
        put(lf / "tokenizer_json_sentencepiece", std::string(1, '\3') + sentencepiece.dump());
        nlohmann::json unigram = sentencepiece;
        unigram["model"]["type"] = "Unigram";
        put(lf / "tokenizer_json_unigram", std::string(1, '\3') + unigram.dump());
        nlohmann::json bad_merge = byte_level;
        bad_merge["model"]["merges"] = {"\xC4\xA0 q"};
        put(lf / "tokenizer_json_merge_not_token", std::string(1, '\3') + bad_merge.dump());
    }
    fs::remove_all(tmp);
    return 0;
}
