# Writes the page: TEMPLATE (web/page.html) with the library's module (MODULE, emscripten's .js with the
# .wasm inlined) put in place of its one /*@TINYGPT_MODULE@*/, as OUT. The page then loads nothing.
#   cmake -DTEMPLATE=page.html -DMODULE=tinygpt_web.js -DOUT=tinygpt-lab.html -P make_page.cmake
file(READ ${TEMPLATE} page)
file(READ ${MODULE} module)
string(FIND "${page}" "/*@TINYGPT_MODULE@*/" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${TEMPLATE}: no /*@TINYGPT_MODULE@*/ to put the module in")
endif()
string(TOLOWER "${module}" lower)
string(FIND "${lower}" "</script" closes)
if(NOT closes EQUAL -1)  # it would end the page's <script> early
  message(FATAL_ERROR "${MODULE}: holds </script at byte ${closes}; it cannot be put inline")
endif()
string(REPLACE "/*@TINYGPT_MODULE@*/" "${module}" page "${page}")
file(WRITE ${OUT}.tmp "${page}")
file(RENAME ${OUT}.tmp ${OUT})
