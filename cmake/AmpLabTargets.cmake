# Warnings per target, not globally, so LibTorch's headers (included as system) stay quiet.
function(amp_lab_warnings target)
  # GCC 12 reports false -Wstringop-overflow/-Wrestrict/-Warray-bounds in std::string code inlined from
  # libstdc++ (LibTorch silences the first too). Designated initializers leave the other members at
  # their defaults on purpose ({.part = Part::Verdict}); GCC 12 still reports them as missing.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
    $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow -Wno-restrict -Wno-array-bounds>)
endfunction()

# One precompiled header for the labs, runner and tests (not the amp library: see src/CMakeLists.txt).
function(amp_lab_use_pch target)
  if(AMP_LAB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM amp_lab_pch)
  endif()
endfunction()

# amp_lab_add_lab(01_master_weights) adds labs/01_master_weights.cpp:
#  - an object library linked into the runner and the tests (the lab registers itself),
#  - an executable lab01_master_weights that runs just that lab.
# Adding a lab is the lab file plus this one line in labs/CMakeLists.txt.
function(amp_lab_add_lab name)
  set(obj lab_${name}_obj)
  add_library(${obj} OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp)
  target_link_libraries(${obj} PUBLIC amp_lab::framework)
  amp_lab_warnings(${obj})
  amp_lab_use_pch(${obj})
  add_executable(lab${name} $<TARGET_OBJECTS:${obj}>)
  target_link_libraries(lab${name} PRIVATE amp_lab::framework amp_lab::lab_main)
  set_property(GLOBAL APPEND PROPERTY AMP_LAB_LAB_OBJECTS ${obj})
  set_property(GLOBAL APPEND PROPERTY AMP_LAB_LAB_EXES lab${name})
endfunction()
