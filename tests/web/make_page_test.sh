#!/usr/bin/env bash
# examples/web/make_page.cmake, the one step that makes every page: what it puts inline, where it cuts a
# page for a program (the header compiled and the page rebuilt around a stand-in for the data), and what it
# refuses, each refusal naming the file.
#   make_page_test.sh CMAKE CXX MAKE_PAGE WORKDIR
set -u
cmake=$1 cxx=$2 make_page=$3 work=$4
rm -rf "$work" && mkdir -p "$work" && cd "$work" || exit 1
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }

printf 'body { color: red; }\n' > look.css
printf 'const shared = "a )\\" b";  // (quotes and a backslash pass through as they are)\n' > part.js
cat > page.html <<'EOF'
<!doctype html><style>
/*@include look.css@*/
</style><script>
/*@include part.js@*/
</script><script type="application/json" id="data">/*@DATA@*/</script><p>${not a cmake variable}; [x]</p>
EOF
# the page whole, with the stand-in DATA where the program puts its data
cat > expected.html <<'EOF'
<!doctype html><style>
body { color: red; }
</style><script>
const shared = "a )\" b";  // (quotes and a backslash pass through as they are)
</script><script type="application/json" id="data">DATA</script><p>${not a cmake variable}; [x]</p>
EOF

"$cmake" -DPAGE=page.html -DNAMESPACE=sample -DOUT=sample_page.h -P "$make_page" || fail "the header was not made"
cat > print.cpp <<'EOF'
#include <cstdio>
#include <string>
#include "sample_page.h"
int main() {
    const std::string page = std::string(sample::kPageBeforeData) + "DATA" + std::string(sample::kPageAfterData);
    std::fwrite(page.data(), 1, page.size(), stdout);
}
EOF
"$cxx" -std=c++20 -o print print.cpp && ./print > got.html || fail "the header does not compile"
cmp -s got.html expected.html || { fail "the page rebuilt from the header differs:"; diff expected.html got.html >&2; }

# a .html output: the page whole; with a module put in its place
sed 's|/\*@DATA@\*/|DATA|' page.html > whole.html
"$cmake" -DPAGE=whole.html -DOUT=whole.out.html -P "$make_page" && cmp -s whole.out.html expected.html ||
  fail "the page written whole differs"
printf '<script>/*@TINYGPT_MODULE@*/</script>\n' > lab.html
printf 'var createTinygpt = 1;\n' > module.js
"$cmake" -DPAGE=lab.html -DMODULE=module.js -DOUT=lab.out.html -P "$make_page" &&
  [ "$(cat lab.out.html)" = '<script>var createTinygpt = 1;
</script>' ] || fail "the module was not put in"

# refused: each must fail, naming what is wrong, and write nothing
refused() {  # refused NAME MESSAGE-PATTERN cmake-arguments...
  local name=$1 pattern=$2
  shift 2
  if "$cmake" "$@" -P "$make_page" > "$name.log" 2>&1; then fail "$name: accepted"
  # (cmake wraps its messages: the words are compared with the lines joined)
  elif ! tr -s ' \n' ' ' < "$name.log" | grep -q -- "$pattern"; then
    fail "$name: the message does not say '$pattern':"; cat "$name.log" >&2
  fi
}
printf 'x = "</SCRIPT>";\n' > closes.js
printf '<script>/*@include closes.js@*/</script>/*@DATA@*/' > closes.html
refused script_in_include 'closes.js: holds </script' -DPAGE=closes.html -DNAMESPACE=x -DOUT=closes.h
printf 'p { }</style>\n' > closes.css
printf '<style>/*@include closes.css@*/</style>/*@DATA@*/' > closes_style.html
refused style_in_include 'closes.css: holds </style' -DPAGE=closes_style.html -DNAMESPACE=x -DOUT=closes_style.h
printf '<p>/*@DATA@*/ and /*@DATA@*/</p>' > twice.html
refused data_twice 'twice.html: needs exactly one /\*@DATA@\*/' -DPAGE=twice.html -DNAMESPACE=x -DOUT=twice.h
printf '<p>no data</p>' > none.html
refused no_data 'none.html: needs exactly one /\*@DATA@\*/' -DPAGE=none.html -DNAMESPACE=x -DOUT=none.h
printf '<p>)tinygpt_page" /*@DATA@*/</p>' > delimiter.html
refused delimiter 'delimiter.html: holds )tinygpt_page" at byte 3, which would end the C++ string early' -DPAGE=delimiter.html -DNAMESPACE=x -DOUT=delimiter.h
printf '<script>/*@include missing.js@*/</script>' > missing.html
refused missing_include 'missing.js' -DPAGE=missing.html -DOUT=missing.out.html
printf 'var a = "</script>";\n' > bad_module.js
refused module_closes 'bad_module.js: holds </script' -DPAGE=lab.html -DMODULE=bad_module.js -DOUT=bad.out.html
refused module_missing 'lab.html: has /\*@TINYGPT_MODULE@\*/ but no MODULE' -DPAGE=lab.html -DOUT=nomodule.out.html
refused no_place 'whole.html: no /\*@TINYGPT_MODULE@\*/' -DPAGE=whole.html -DMODULE=module.js -DOUT=noplace.out.html
for out in closes.h closes_style.h twice.h none.h delimiter.h missing.out.html bad.out.html nomodule.out.html noplace.out.html; do
  [ -e "$out" ] && fail "$out was written by a refused run"
done

[ $failed = 0 ] && echo "make_page: the pages made as written; 9 bad pages refused, naming the problem"
exit $failed
