# Every HTML page the project writes is a file of examples/web/ (figure.html, run_report.html, lab.html, with
# the CSS they share in pages.css), made at build time into what ships by one step, make_page.cmake:
#
#   tinygpt_page(<page> <output> [NAMESPACE <ns>] [MODULE <file>] [DEPENDS <target or file>...])
#
# <output> a .h: the page as the C++ strings <ns>::kPageBeforeData and kPageAfterData, cut where its data
# goes (/*@DATA@*/), for a program that writes it; a .html: the page whole, with MODULE put in. The files
# the page includes (/*@include NAME@*/) are found here, at configure time, to rebuild when they change.
set(TINYGPT_MAKE_PAGE ${CMAKE_CURRENT_LIST_DIR}/make_page.cmake)

function(tinygpt_page page output)
  cmake_parse_arguments(arg "" "NAMESPACE;MODULE" "DEPENDS" ${ARGN})
  get_filename_component(page ${page} ABSOLUTE)
  get_filename_component(dir ${page} DIRECTORY)
  file(READ ${page} text)
  string(REGEX MATCHALL "/\\*@include [^@]+@\\*/" includes "${text}")
  set(included "")
  foreach(directive IN LISTS includes)
    string(REGEX REPLACE "^/\\*@include ([^@]+)@\\*/$" "${dir}/\\1" file "${directive}")
    list(APPEND included ${file})
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${page})  # (a new include)
  get_filename_component(name ${page} NAME)
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DPAGE=${page} -DOUT=${output} -DNAMESPACE=${arg_NAMESPACE} -DMODULE=${arg_MODULE}
            -P ${TINYGPT_MAKE_PAGE}
    DEPENDS ${page} ${included} ${TINYGPT_MAKE_PAGE} ${arg_DEPENDS}
    COMMENT "the page web/${name}, made into ${output}")
endfunction()
