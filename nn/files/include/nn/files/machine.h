// What the machine has, for the checks that refuse sizes it cannot hold before allocating them.
#pragma once

#include <cstdint>

namespace nn {

// The machine's physical memory in bytes (0 when the system does not say).
uint64_t physical_memory_bytes();

}  // namespace nn
