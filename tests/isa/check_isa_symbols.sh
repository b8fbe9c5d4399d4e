#!/usr/bin/env bash
# check_isa_symbols.sh NM LIBRARY...: the per-instruction-set objects of tinygpt's static libraries can
# never lend a baseline caller their code. Fails when
#   1. any object defines an indirect function (nm type i): target_clones and its resolver, which
#      clang 16 got wrong (it ran the AVX-512 clone on AVX2 CPUs); kernels are chosen by kernels.cpp;
#   2. an object compiled for an instruction set (a source named *_avx2.cpp, *_avx512.cpp or *_avx512bf16.cpp) defines a
#      weak function (nm type W): an inline function or template instance of which the linker keeps any
#      one copy, so a baseline caller anywhere in the program (a user's own std::fill_n, say) may get
#      the one built for AVX-512. (Weak data, types V and u, is left alone: its bytes do not depend on
#      the instruction set; UBSan's typeinfo for function types is such data.)
#   3. an x86-64 library has no such object at all (then this test would prove nothing).
set -uo pipefail
nm_tool=$1
shift
status=0
isa_objects=0
for lib in "$@"; do
  listing=$("$nm_tool" -A --defined-only "$lib") || { echo "check_isa_symbols: $nm_tool failed on $lib"; exit 1; }
  ifuncs=$(awk '$2 == "i" {print $1, $3}' <<<"$listing")
  if [ -n "$ifuncs" ]; then
    echo "FAIL: $lib defines indirect functions (target_clones or ifunc), resolved by the compiler's rules:"
    "$nm_tool" -C -A --defined-only "$lib" | awk '$2 == "i"' | head -20
    status=1
  fi
  isa_lines=$(grep -E '_avx(2|512|512bf16)\.cpp\.o:' <<<"$listing")
  count=$(awk -F: '{print $2}' <<<"$isa_lines" | sort -u | grep -c . || true)
  isa_objects=$((isa_objects + count))
  shared=$(awk '$2 == "W" {print $1, $2, $3}' <<<"$isa_lines")
  if [ -n "$shared" ]; then
    echo "FAIL: objects compiled for an instruction set in $lib define weak functions the linker may hand to other objects' callers:"
    while read -r where type symbol; do
      echo "  $where $type $(c++filt "$symbol")"
    done <<<"$shared"
    status=1
  fi
  echo "check_isa_symbols: $lib: $count per-ISA objects, $(wc -l <<<"$listing") symbols read"
done
if [ "$(uname -m)" = x86_64 ] && [ "$isa_objects" -eq 0 ]; then
  echo "FAIL: no object named *_avx2.cpp.o or *_avx512.cpp.o in $*: nothing was checked"
  status=1
fi
[ "$status" -eq 0 ] && echo "check_isa_symbols: passed"
exit "$status"
