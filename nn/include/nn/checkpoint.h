// Weights on disk in the safetensors format, so a PyTorch user reads them with
// `safetensors.torch.load_file(path)`:
//
//     [8 bytes: N, little-endian u64] [N bytes: JSON header, padded with spaces to a multiple of 8] [data]
//     header: {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 24]}, ...}
//
// data_offsets count from the first byte after the header; the values are float32, little-endian,
// row-major. Saving writes a temporary file in the same directory, fsyncs it and renames it over the
// target, so a crash or a full disk never leaves a half-written checkpoint in place of a good one.
// Loading validates every byte of the layout before trusting it and names the file and the problem.
//
//     nn::save_module("model.safetensors", model, {{"vocabulary", tok.vocabulary_utf8()}});
//     nn::load_module("model.safetensors", model);  // all parameters, right shapes, or nothing changes
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <autograd/tensor.h>

#include "nn/module.h"

namespace nn {

using NamedTensors = std::vector<std::pair<std::string, autograd::Tensor>>;

struct Safetensors {
    NamedTensors tensors;  // in file order (by data offset), each a new leaf of its stored shape
    std::map<std::string, std::string> metadata;
};

// Bounds checked before anything is allocated from the file's own numbers.
struct SafetensorsLimits {
    uint64_t max_header_bytes = 100 << 20;      // as the reference implementation's 100 MB
    uint64_t max_file_bytes = 16ull << 30;
};

// Writes `tensors` in the given order with contiguous offsets. Names must be non-empty, distinct and not
// "__metadata__" (std::invalid_argument). I/O failures throw std::runtime_error naming the path and the
// reason; the file previously at `path`, if any, is then untouched and no temporary file remains.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata = {});

// Reads and validates a safetensors file of F32 tensors; throws std::runtime_error naming the path and
// the problem for anything malformed (see the list in checkpoint.cpp).
Safetensors load_safetensors(const std::filesystem::path& path, const SafetensorsLimits& limits = {});

// save_safetensors of module.named_parameters().
void save_module(const std::filesystem::path& path, const Module& module,
                 const std::map<std::string, std::string>& metadata = {});
// Copies the file's tensors into the module's parameters. The file must hold exactly the module's
// parameter names with the same shapes; otherwise std::runtime_error lists the missing, extra and
// mismatched names with their shapes, and the module is left unchanged. Gradients are not touched.
void load_module(const std::filesystem::path& path, Module& module);
// The same check and copy from tensors already in memory (a checkpoint holding more than weights);
// a mismatch is std::invalid_argument.
void load_parameters(Module& module, const NamedTensors& tensors);

}  // namespace nn
