# LibTorch ships its own copy of the fmt headers in its include folder, and CMake passes Torch's
# include folders as -isystem, which the compiler searches before /usr/include. A plain
# `#include <fmt/format.h>` would then compile against Torch's fmt (12.x) while linking Debian's
# libfmt (9.x): ODR trouble and link errors. We put a folder holding only a link to the fmt headers
# of the package we link as an ordinary -I folder, which is searched before every -isystem folder,
# and pass the expected version so a static_assert catches any mismatch at compile time.
get_target_property(_amp_fmt_inc fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
if(NOT _amp_fmt_inc)
  set(_amp_fmt_inc /usr/include)
endif()
list(GET _amp_fmt_inc 0 _amp_fmt_inc)
set(AMP_LAB_FMT_SHIM ${PROJECT_BINARY_DIR}/fmt-shim)
file(MAKE_DIRECTORY ${AMP_LAB_FMT_SHIM})
file(CREATE_LINK ${_amp_fmt_inc}/fmt ${AMP_LAB_FMT_SHIM}/fmt SYMBOLIC)

string(REPLACE "." ";" _amp_fmt_v "${fmt_VERSION}")
list(GET _amp_fmt_v 0 _fmt_major)
list(GET _amp_fmt_v 1 _fmt_minor)
list(GET _amp_fmt_v 2 _fmt_patch)
math(EXPR AMP_LAB_FMT_VERSION "${_fmt_major} * 10000 + ${_fmt_minor} * 100 + ${_fmt_patch}")

add_library(amp_lab_fmt INTERFACE)
add_library(amp_lab::fmt ALIAS amp_lab_fmt)
target_include_directories(amp_lab_fmt BEFORE INTERFACE ${AMP_LAB_FMT_SHIM})
target_compile_definitions(amp_lab_fmt INTERFACE AMP_LAB_FMT_VERSION=${AMP_LAB_FMT_VERSION})
target_link_libraries(amp_lab_fmt INTERFACE fmt::fmt)
message(STATUS "amp-lab: fmt ${fmt_VERSION} headers from ${_amp_fmt_inc} (Torch's copy bypassed)")
