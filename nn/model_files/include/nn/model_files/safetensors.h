// Weights on disk in the safetensors format, so a PyTorch user reads them with
// `safetensors.torch.load_file(path)`:
//
//     [8 bytes: N, little-endian u64] [N bytes: JSON header, padded with spaces to a multiple of 8] [data]
//     header: {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
//
// data_offsets count from the first byte after the header; the values are float32, little-endian,
// row-major. Saving writes a temporary file in the same directory, fsyncs it and renames it over the
// target, so a crash or a full disk never leaves a half-written checkpoint in place of a good one.
// Every tensor's CRC32C goes into the metadata as "crc32c.NAME" (8 hex digits of its stored bytes), and
// the metadata's own as "crc32c.__metadata__" (of every other entry in key order, each key and value as
// its 8-byte little-endian length and its bytes), which PyTorch reads as ordinary metadata. Loading
// validates every byte of the layout and every checksum before trusting them and names the file and the
// problem (the tensor, for a checksum). A header over what loading reads (100 MB) is never written.
//
//     nn::save_module("model.safetensors", model, {{"vocabulary", tok.vocabulary_utf8()}});
//     nn::load_module("model.safetensors", model);  // all parameters, right shapes, or nothing changes
//
// From PyTorch, a training checkpoint's weights without its optimizer state (trainer.h):
//
//     from safetensors.torch import load_file
//     weights = {k: v for k, v in load_file("run.safetensors").items() if not k.startswith("train_state.")}
//     # Linear weights are stored (in, out), as the tutorial's x @ W: transpose them for torch.nn.Linear.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <autograd/tensor.h>
#include <nn/files/atomic_file.h>

#include "nn/module.h"

namespace nn {

using NamedTensors = std::vector<std::pair<std::string, autograd::Tensor>>;

struct Safetensors {
    NamedTensors tensors;                         // in file order (by data offset), each a new leaf of its stored shape
    std::map<std::string, std::string> metadata;  // the caller's: without the checksums
    bool checksummed = false;  // every tensor's checksum was there and matched (false: a file from before them)
};

// How far a loader has read its file, for a progress bar: the bytes up to where it has read and the
// file's size, from the header's end to the size (at the end, size of size).
using ReadProgress = std::function<void(uint64_t done, uint64_t total)>;

// Bounds checked before anything is allocated from the file's own numbers.
struct SafetensorsLimits {
    uint64_t max_header_bytes = 100 << 20;  // as the reference implementation's 100 MB
    uint64_t max_file_bytes = 16ull << 30;
    // Beyond limits, how other writers' files are read (Hugging Face's, nn/model_files/gpt2_weights.h):
    bool widen_half = false;             // F16 and BF16 tensors too, widened to float32 (else only F32)
    bool warn_without_checksums = true;  // the warning for a file without checksums
};

// IEEE half (F16) and bfloat16 (BF16) bits, as other writers store them, widened to float32 exactly.
float f16_to_float(uint16_t bits);
float bf16_to_float(uint16_t bits);

// Writes `tensors` in the given order with contiguous offsets, their checksums and the metadata's. Names
// must be non-empty, distinct and not "__metadata__", metadata keys must not start with "crc32c.", and
// the header must fit SafetensorsLimits::max_header_bytes (std::invalid_argument, nothing written). I/O
// failures throw std::runtime_error naming the path and the reason; the file previously at `path`, if
// any, is then untouched and no temporary file remains.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});
// save_safetensors' bytes into `file`, not committed: a caller writing several files commits them
// together (write_hf_gpt2's weights and config.json). `path` names the file in messages.
void write_safetensors(AtomicFile& file, const std::filesystem::path& path, const NamedTensors& tensors,
                       const std::map<std::string, std::string>& metadata = {});
// The size of the header (with its 8-byte length) that saving these tensors and metadata would write: a
// caller refuses before training what it could not save (SafetensorsLimits::max_header_bytes).
uint64_t safetensors_header_bytes(const NamedTensors& tensors, const std::map<std::string, std::string>& metadata);

// Reads and validates a safetensors file of F32 tensors; throws std::runtime_error naming the path and
// the problem for anything malformed or a checksum that does not match (see the list in checkpoint.cpp).
// A file with no checksums loads, and the warning handler is told so.
Safetensors load_safetensors(const std::filesystem::path& path, const SafetensorsLimits& limits = {});

// A safetensors file opened and checked as load_safetensors checks it (everything but the tensors'
// values and checksums), its data not yet read: for loaders that read each tensor straight into its
// place (a new model's parameters, an optimizer's moments), so that loading a file takes about the
// file's size in memory plus a bounded buffer, not twice it. Each read verifies the tensor's checksum
// with load_safetensors's message; finish() then makes the checks load_safetensors makes last.
//
//     nn::SafetensorsReader file("run.safetensors");
//     for (size_t i = 0; i < file.tensors().size(); ++i) file.read(i, destination(file.tensors()[i]));
//     file.finish();
class SafetensorsReader {
public:
    struct Entry {
        std::string name;
        autograd::Shape shape;
        uint64_t begin = 0, end = 0;  // data_offsets
        uint64_t value_bytes = 4;     // 2: F16 or BF16 (SafetensorsLimits::widen_half)
        bool bf16 = false;
    };
    explicit SafetensorsReader(const std::filesystem::path& path, const SafetensorsLimits& limits = {});
    SafetensorsReader(SafetensorsReader&&) noexcept;
    ~SafetensorsReader();

    const std::vector<Entry>& tensors() const { return entries_; }                    // in file order (by data offset)
    const std::map<std::string, std::string>& metadata() const { return metadata_; }  // without the checksums
    bool checksummed() const { return checksummed_; }

    // Reads tensor i's values, as float32, into `out` (its numel values; F16 and BF16 widened through a
    // bounded buffer) and verifies its checksum: a mismatch throws after `out` was written.
    void read(size_t i, std::span<float> out);
    // The same through a bounded buffer: use(values, index of values[0]) for each piece in turn.
    void read_pieces(size_t i, const std::function<void(std::span<const float>, size_t)>& use);
    // Every tensor in file order: into the tensor of `into` with its name and shape (a new model's
    // parameters: overwritten even when the file is refused later), into a new tensor otherwise, or,
    // where keep(name) is false, through a bounded buffer and not returned. Then finish(), then, with
    // `finite_where`, check_finite of every tensor read (the ones not kept too). Returns the tensors
    // kept in file order: check and copy them as load_safetensors's (load_parameters copies nothing
    // onto itself).
    NamedTensors read_all(const NamedTensors& into, const std::function<bool(const std::string&)>& keep = {},
                          const std::optional<std::string>& finite_where = std::nullopt);
    // After the reads: refuses a file that grew while being read, and warns of one without checksums.
    void finish();
    // Tells `progress` how far the reads have come: now, as they go (every 64 MiB at most), and at finish().
    void on_progress(ReadProgress progress);

private:
    void read_exact(void* out, size_t size, uint64_t offset);
    void report(uint64_t reached);
    std::filesystem::path path_;
    SafetensorsLimits limits_;
    int fd_ = -1;
    uint64_t file_size_ = 0, data_start_ = 0;
    std::vector<Entry> entries_;
    std::map<std::string, std::string> metadata_, checksums_;
    bool checksummed_ = false;
    bool metadata_checked_ = false;  // its metadata's own checksum was there and matched
    ReadProgress progress_;
    uint64_t reached_ = 0;  // the furthest byte read
};

// Where the loaders' warnings go: by default stderr, as "warning: MESSAGE". An empty handler silences them.
using WarningHandler = std::function<void(const std::string& message)>;
void set_warning_handler(WarningHandler handler);

// Throws std::runtime_error, prefixed by `where` (a path), naming the first tensor that holds a NaN or
// an infinity, the value and its index: the weights of a model are refused before they are used.
void check_finite(const NamedTensors& tensors, const std::string& where);

// save_safetensors of module.named_parameters().
void save_module(const std::filesystem::path& path, const Module& module,
                 const std::map<std::string, std::string>& metadata = {});
// Copies the file's tensors into the module's parameters. The file must hold exactly the module's
// parameter names with the same shapes; otherwise std::runtime_error lists the missing, extra and
// mismatched names with their shapes, and the module is left unchanged; so are non-finite values
// (check_finite). Gradients are not touched.
void load_module(const std::filesystem::path& path, Module& module);
// The same check and copy from tensors already in memory (a checkpoint holding more than weights);
// a mismatch is std::invalid_argument.
void load_parameters(Module& module, const NamedTensors& tensors);

}  // namespace nn
