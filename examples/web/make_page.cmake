# Turns a page of examples/web/ (PAGE) into what a program writes or what the build ships (OUT), so that
# the page loads nothing:
#   /*@include NAME@*/    the file NAME beside PAGE (the CSS all pages share, a script of its own), put inline
#   /*@TINYGPT_MODULE@*/  MODULE, emscripten's .js with the .wasm inlined (the page in the browser)
#   /*@DATA@*/            where the program puts its JSON: with OUT a .h, the page is cut there into the
#                         C++ strings NAMESPACE::kPageBeforeData and kPageAfterData
# With OUT a .html the page is written whole.
#   cmake -DPAGE=lab.html -DMODULE=tinygpt_web.js -DOUT=tinygpt-lab.html -P make_page.cmake
#   cmake -DPAGE=figure.html -DNAMESPACE=figure -DOUT=figure_page.h -P make_page.cmake
# (pages.cmake's tinygpt_page() runs this at build time.)
get_filename_component(dir ${PAGE} ABSOLUTE)
get_filename_component(dir ${dir} DIRECTORY)
file(READ ${PAGE} page)

# Text put inside a <script> or <style> must not end it early.
function(check_inline what text closers)
  string(TOLOWER "${text}" lower)
  foreach(closer IN LISTS closers)
    string(FIND "${lower}" "${closer}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "${what}: holds ${closer} at byte ${at}; it cannot be put inline")
    endif()
  endforeach()
endfunction()

string(REGEX MATCHALL "/\\*@include [^@]+@\\*/" includes "${page}")
foreach(directive IN LISTS includes)
  string(REGEX REPLACE "^/\\*@include ([^@]+)@\\*/$" "\\1" name "${directive}")
  file(READ ${dir}/${name} text)
  check_inline(${dir}/${name} "${text}" "</script;</style")
  string(REGEX REPLACE "\n$" "" text "${text}")  # the directive's own line ends it
  string(REPLACE "${directive}" "${text}" page "${page}")
endforeach()

string(FIND "${page}" "/*@TINYGPT_MODULE@*/" at)
if(DEFINED MODULE AND NOT MODULE STREQUAL "")
  if(at EQUAL -1)
    message(FATAL_ERROR "${PAGE}: no /*@TINYGPT_MODULE@*/ to put the module in")
  endif()
  file(READ ${MODULE} module)
  check_inline(${MODULE} "${module}" "</script")
  string(REPLACE "/*@TINYGPT_MODULE@*/" "${module}" page "${page}")
elseif(NOT at EQUAL -1)
  message(FATAL_ERROR "${PAGE}: has /*@TINYGPT_MODULE@*/ but no MODULE was given")
endif()

if(OUT MATCHES "\\.h$")
  string(FIND "${page}" "/*@DATA@*/" at)
  string(FIND "${page}" "/*@DATA@*/" last REVERSE)
  if(at EQUAL -1 OR NOT at EQUAL last)
    message(FATAL_ERROR "${PAGE}: needs exactly one /*@DATA@*/, where the program puts its data")
  endif()
  string(SUBSTRING "${page}" 0 ${at} before)
  math(EXPR at "${at} + 10")  # (the length of /*@DATA@*/)
  string(SUBSTRING "${page}" ${at} -1 after)
  set(close ")tinygpt_page\"")
  string(FIND "${page}" "${close}" at)
  if(NOT at EQUAL -1)
    message(FATAL_ERROR "${PAGE}: holds ${close} at byte ${at}, which would end the C++ string early")
  endif()
  get_filename_component(name ${PAGE} NAME)
  set(page "// examples/web/${name} with what it includes, cut where the program puts its data. Written at build
// time by examples/web/make_page.cmake: edit the page, not this.
#pragma once

#include <string_view>

namespace ${NAMESPACE} {

inline constexpr std::string_view kPageBeforeData = R\"tinygpt_page(${before})tinygpt_page\";
inline constexpr std::string_view kPageAfterData = R\"tinygpt_page(${after})tinygpt_page\";

}  // namespace ${NAMESPACE}
")
endif()
file(WRITE ${OUT}.tmp "${page}")
file(RENAME ${OUT}.tmp ${OUT})
