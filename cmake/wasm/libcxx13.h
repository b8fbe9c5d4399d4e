// The WebAssembly build's shim for emscripten 3.1.6's libc++ 13 (cmake/wasm/wasm.cmake forces it into
// every file): the std::ranges algorithms the sources use that libc++ 13 lacks (they came in libc++ 15),
// written on the iterator versions. Nothing here when the library has them.
#pragma once

#if defined(__cplusplus)
#include <version>  // defines _LIBCPP_VERSION
#if defined(_LIBCPP_VERSION) && _LIBCPP_VERSION < 15000
#include <algorithm>
#include <iterator>
#include <ranges>

namespace std::ranges {
template <class R, class Out>
Out copy(R&& r, Out out) { return std::copy(std::ranges::begin(r), std::ranges::end(r), out); }
template <class R, class T>
auto fill(R&& r, const T& value) { std::fill(std::ranges::begin(r), std::ranges::end(r), value); return std::ranges::end(r); }
template <class R, class Pred>
auto count_if(R&& r, Pred pred) { return std::count_if(std::ranges::begin(r), std::ranges::end(r), pred); }
}  // namespace std::ranges
#endif
#endif
