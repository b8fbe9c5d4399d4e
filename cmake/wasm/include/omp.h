// The WebAssembly build's stand-in for OpenMP (cmake/wasm/wasm.cmake): one thread. The kernels ask
// only these three; without -fopenmp their `#pragma omp` regions run once, on the calling thread.
#pragma once

inline int omp_in_parallel() { return 0; }
inline int omp_get_thread_num() { return 0; }
inline int omp_get_num_threads() { return 1; }
