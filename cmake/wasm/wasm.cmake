# The WebAssembly build (the `wasm` preset, Debian's emscripten 3.1.6: clang 14, libc++ 13; docs/wasm.md).
# Included by the top-level CMakeLists.txt instead of its find_package calls: the Debian packages found
# there are built for the host, so here the header-only ones are used from /usr/include, and what
# emscripten lacks is stood in for by this directory's headers, all here:
#   include/omp.h        one thread: the kernels' OpenMP calls, answered for a team of one (no -fopenmp,
#                        so the `#pragma omp` lines are ignored)
#   include/linux/fs.h   the flags cli.cpp asks for with ioctl (which fails here: "not asked")
#   include/source_location  C++20's, which libc++ 13 lacks: from clang 14's __builtin_FILE and LINE
#   libcxx13.h           the std::ranges algorithms libc++ 13 does not have yet (forced into every file)
# Not built: GPT-2's BPE (PCRE2 is not there for wasm), model files, sampling, all of tinygpt::train but its
# optimizers and batches, and what needs the rest; no per-ISA kernels (the processor is not x86-64 here, so
# autograd/CMakeLists.txt adds none); tests and benchmarks.

set(here ${CMAKE_CURRENT_LIST_DIR})

# fmt and nlohmann-json from Debian's headers, fmt header-only (libfmt.so is a host library). Only these
# two folders are put on the include path, never /usr/include itself (glibc's headers would shadow
# emscripten's musl).
set(wasm_headers ${CMAKE_BINARY_DIR}/wasm_headers)
foreach(dir fmt nlohmann)
  if(NOT EXISTS /usr/include/${dir})
    message(FATAL_ERROR "wasm build: /usr/include/${dir} is missing (Debian's libfmt-dev and nlohmann-json3-dev)")
  endif()
  file(MAKE_DIRECTORY ${wasm_headers})
  file(CREATE_LINK /usr/include/${dir} ${wasm_headers}/${dir} SYMBOLIC)
endforeach()
add_library(fmt::fmt INTERFACE IMPORTED)
target_include_directories(fmt::fmt SYSTEM INTERFACE ${wasm_headers})
target_compile_definitions(fmt::fmt INTERFACE FMT_HEADER_ONLY=1)
add_library(nlohmann_json::nlohmann_json INTERFACE IMPORTED)
target_include_directories(nlohmann_json::nlohmann_json SYSTEM INTERFACE ${wasm_headers})

# emscripten's linker runs Node scripts that need Debian's node-acorn, in /usr/share/nodejs, where only
# Debian's own Node looks (a Node from elsewhere, as on this machine, does not).
set(CMAKE_CXX_LINKER_LAUNCHER ${CMAKE_COMMAND} -E env NODE_PATH=/usr/share/nodejs)

add_library(OpenMP::OpenMP_CXX INTERFACE IMPORTED)  # nothing to link: include/omp.h is on every path (below)

# size_t is 32 bits here: -Wconversion would flag every int64_t index into a std::vector or std::span
# (hundreds). Memory is at most 4 GB, so no index reaches 2^32.
list(APPEND TINYGPT_WARNINGS -Wno-shorten-64-to-32)

# For every target: the shims; C++ exceptions caught, by WebAssembly's own exception handling
# (emscripten ignores them by default: a throw would abort instead of reaching the command line's error
# message; its JavaScript exceptions made the module 19% larger and the lab 1.3x slower under Node);
# SIMD128, which the portable kernels' 4-float vectors compile to (without it they are scalar code: the
# page's training step was 2.6x slower, docs/wasm.md); memory that grows as a model needs; the exit
# status of main passed on; the .wasm inlined in the .js (one file, as the page needs; and Node 18's
# fetch cannot load a .wasm beside the .js by its path, which emscripten 3.1.6 tries first).
add_compile_options("SHELL:-include ${here}/libcxx13.h" -fwasm-exceptions -msimd128)
include_directories(SYSTEM ${here}/include)
add_link_options(-fwasm-exceptions -msimd128 -sALLOW_MEMORY_GROWTH=1 -sEXIT_RUNTIME=1 -sSINGLE_FILE=1)
