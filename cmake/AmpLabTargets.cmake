# Warnings per target, not globally, so LibTorch's headers (included as system) stay quiet.
function(amp_lab_warnings target)
  # GCC 12 reports false -Wstringop-overflow/-Wrestrict/-Warray-bounds in std::string code inlined from
  # libstdc++ (LibTorch silences the first too). Designated initializers leave the other members at
  # their defaults on purpose ({.part = Part::Verdict}); GCC 12 still reports them as missing.
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers
    $<$<CXX_COMPILER_ID:GNU>:-Wno-stringop-overflow -Wno-restrict -Wno-array-bounds>)
endfunction()

# Build profiles. Every target states its profile where it is added, beside its sources:
#   timed  amp_lab_timed_compile(): what the labs and the benchmark measure (the labs, the lab framework, the
#          amp library, the benchmark): the build type's optimisation (-O3 in Release), on the precompiled
#          LibTorch header (src/lab/libtorch.h) unless told NO_PCH.
#   quick  amp_lab_quick_compile(): code no one times (the runner, the report, the command lines, the tests):
#          -Og, which compiles in about half the time of -O3 (the runner's largest unit: 8.1 s against
#          15.7 s) and keeps the flow analysis GCC's warnings need. The precompiled header, built at -O3,
#          serves -Og units too (both define __OPTIMIZE__; -Winvalid-pch is on).
#   judge  amp_lab_add_exercise_unit() (cmake/AmpLabExercises.cmake): a learner's file in place of a lab's
#          amp.cpp: -O0 on the exercises' own precompiled header, so a check compiles fast.
# UNITY: the target's units compiled as one (a unity build), so the headers they share are parsed once.
function(amp_lab_quick_compile target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "UNITY" "" "")
  target_compile_options(${target} PRIVATE $<$<AND:$<CXX_COMPILER_ID:GNU,Clang>,$<NOT:$<CONFIG:Debug>>>:-Og>)
  if(arg_UNITY)
    set_target_properties(${target} PROPERTIES UNITY_BUILD ON)
  endif()
endfunction()

function(amp_lab_timed_compile target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "NO_PCH" "" "")
  if(NOT arg_NO_PCH)
    amp_lab_use_pch(${target})
  endif()
endfunction()

# One precompiled header for the labs, runner and tests (not the amp library: see src/CMakeLists.txt).
function(amp_lab_use_pch target)
  if(AMP_LAB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM amp_lab_pch)
  endif()
endfunction()

# amp_lab_add_lab(01_master_weights [CORE] [NO_PCH]) adds the lab in labs/01_master_weights/:
#  - lab.cpp (the problem, measure and report) and amp.cpp (the AMP code a learner copies), each an object
#    library, lab_<name>_lab and lab_<name>_amp, at the labs' profile: the build type's optimisation (-O3 in
#    Release), on the precompiled src/lab/libtorch.h; both are linked into the lab tests (the lab registers
#    itself); a judge.cpp beside them (what exists only to judge a learner's code: reference steps, crafted
#    cases, mistake classifiers) is part of lab_<name>_lab;
#  - an executable lab01_master_weights of the two, that runs just that lab;
#  - with labs/<name>/exercise.cpp (the starter: amp.cpp with its key lines taken out), the exercise: the
#    learner's file linked in place of amp.cpp with the same lab.cpp object (amp_lab_add_exercise_unit).
# Adding a lab is its folder plus one line in labs/CMakeLists.txt. A lab links the whole lab framework
# (amp_lab::framework), or with CORE the lab core alone (autocast, the GradScaler, the report, charts and
# registry: src/CMakeLists.txt), and then its build waits for nothing else. NO_PCH compiles it without the
# precompiled LibTorch header, which takes longer to build than such a lab takes to compile without it: lab
# 01's, so that the first question waits for neither (BENCHMARKS.md, "Cold build").
function(amp_lab_add_lab name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "CORE;NO_PCH" "" "")
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/${name})
  set(framework amp_lab::framework)
  if(arg_CORE)
    set(framework amp_lab::lab_core)
  endif()
  # A lab's judge (judge.cpp: what exists only to judge a learner's code) is part of its lab object. Found by a
  # CONFIGURE_DEPENDS glob, not EXISTS: a build folder configured before the lab had one reconfigures when
  # it appears, where EXISTS left lab.cpp's calls into it unresolved at the link.
  file(GLOB judge CONFIGURE_DEPENDS ${dir}/judge.cpp)
  foreach(part lab amp)
    add_library(lab_${name}_${part} OBJECT ${dir}/${part}.cpp)
    if(part STREQUAL "lab" AND judge)
      target_sources(lab_${name}_lab PRIVATE ${judge})
    endif()
    target_link_libraries(lab_${name}_${part} PUBLIC ${framework})
    amp_lab_warnings(lab_${name}_${part})
    if(arg_NO_PCH)
      amp_lab_timed_compile(lab_${name}_${part} NO_PCH)
    else()
      amp_lab_timed_compile(lab_${name}_${part})
    endif()
  endforeach()
  add_executable(lab${name} $<TARGET_OBJECTS:lab_${name}_lab> $<TARGET_OBJECTS:lab_${name}_amp>)
  target_link_libraries(lab${name} PRIVATE ${framework} amp_lab::lab_main)
  if(EXISTS ${dir}/exercise.cpp)
    amp_lab_add_exercise(${name})
  endif()
endfunction()
