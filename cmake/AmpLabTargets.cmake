# Warnings per target, not globally, so LibTorch's headers (included as system) stay quiet.
function(amp_lab_warnings target)
  # GCC 12 reports false -Wstringop-overflow/-Wrestrict/-Warray-bounds in std::string code inlined from
  # libstdc++ (LibTorch silences the first too). Designated initializers leave the other members at
  # their defaults on purpose ({.part = Part::Verdict}); GCC 12 still reports them as missing.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
    $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow -Wno-restrict -Wno-array-bounds>)
endfunction()

# Code no one times (the runner, the report, the command lines): -Og, which compiles in about half the time
# of -O3 (the runner's largest unit: 8.1 s against 15.7 s) and keeps the flow analysis GCC's warnings need.
# The labs' arithmetic runs in LibTorch's kernels; the labs, the amp library and the benchmark stay at -O3
# (the labs with an exercise are linked from their exercise's -O0 units: amp_lab_add_lab below).
# UNITY: the target's units compiled as one (a unity build), so the headers they share are parsed once.
function(amp_lab_quick_compile target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "UNITY" "" "")
  target_compile_options(${target} PRIVATE $<$<AND:$<CXX_COMPILER_ID:GNU,Clang>,$<NOT:$<CONFIG:Debug>>>:-Og>)
  if(arg_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON)
  endif()
endfunction()

# One precompiled header for the labs, runner and tests (not the amp library: see src/CMakeLists.txt).
function(amp_lab_use_pch target)
  if(AMP_LAB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM amp_lab_pch)
  endif()
endfunction()

# amp_lab_add_lab(01_master_weights [CORE] [NO_PCH]) adds labs/01_master_weights.cpp:
#  - its objects, linked into the lab tests (the lab registers itself),
#  - an executable lab01_master_weights that runs just that lab.
# Adding a lab is the lab file plus this one line in labs/CMakeLists.txt. A lab links the whole lab framework
# (amp_lab::framework), or with CORE the lab core alone (autocast, the GradScaler, the report, charts and
# registry: src/CMakeLists.txt), and then its build waits for nothing else. NO_PCH compiles it without the
# precompiled <torch/torch.h>, which takes longer to build than such a lab takes to compile without it: lab
# 01's, so that the first question waits for neither (BENCHMARKS.md, "Cold build").
# A lab with an exercise (labs/exercises/<name>.cpp) is linked from the two units its exercise compiles
# anyway (cmake/AmpLabExercises.cmake): the lab file with its AMP code declared (the harness) and that code
# as a learner's file (the generated reference), both -O0 on the exercises' header. It is the same program,
# and the lab file is compiled once, not twice (it took 14-27 s more at -O3). CORE and NO_PCH do not apply.
function(amp_lab_add_lab name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "CORE;NO_PCH" "" "")
  set_property(GLOBAL APPEND PROPERTY AMP_LAB_LAB_NAMES ${name})
  set_property(GLOBAL APPEND PROPERTY AMP_LAB_LAB_EXES lab${name})
  if(EXISTS ${PROJECT_SOURCE_DIR}/labs/exercises/${name}.cpp)
    if(arg_CORE OR arg_NO_PCH)
      message(FATAL_ERROR "amp_lab_add_lab(${name}): a lab with an exercise is built from its harness; drop CORE and NO_PCH")
    endif()
    set(objects exercise_${name}_harness exercise_${name}_reference)
    add_executable(lab${name} $<TARGET_OBJECTS:exercise_${name}_harness> $<TARGET_OBJECTS:exercise_${name}_reference>)
    target_link_libraries(lab${name} PRIVATE amp_lab::framework amp_lab::lab_main)
    set_property(GLOBAL APPEND PROPERTY AMP_LAB_LAB_OBJECTS ${objects})
    return()
  endif()
  set(obj lab_${name}_obj)
  set(framework amp_lab::framework)
  if(arg_CORE)
    set(framework amp_lab::lab_core)
  endif()
  add_library(${obj} OBJECT ${CMAKE_CURRENT_SOURCE_DIR}/${name}.cpp)
  target_link_libraries(${obj} PUBLIC ${framework})
  amp_lab_warnings(${obj})
  if(NOT arg_NO_PCH)
    amp_lab_use_pch(${obj})
  endif()
  add_executable(lab${name} $<TARGET_OBJECTS:${obj}>)
  target_link_libraries(lab${name} PRIVATE ${framework} amp_lab::lab_main)
  set_property(GLOBAL APPEND PROPERTY AMP_LAB_LAB_OBJECTS ${obj})
endfunction()
