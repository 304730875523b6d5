# Exercises: the learner writes a lab's AMP code and the lab's own checks judge it.
#
# An exercise is a starter file, labs/exercises/NN_<lab stem>.cpp, for a lab whose AMP code stands in
# `#ifndef AMP_LAB_EXERCISE` blocks (src/runner/exercise_source.h). For each one this module builds
#   - exercise/NN_<stem>.h, the context the learner's file includes (the lab's constants, helpers and the
#     declarations of what it calls), and NN_<stem>/reference.cpp, the lab's own code as a learner's file;
#     both generated from the lab by amp-lab-exercise-gen, so they cannot drift from it;
#   - the harness: the lab file compiled once with AMP_LAB_EXERCISE, its AMP code declared, not defined;
#     with the reference it is also the lab's own executable (cmake/AmpLabTargets.cmake, amp_lab_add_lab);
#   - exerciseNN_learner: the harness linked with the learner's file (build/exercises/NN_<stem>/learner.cpp,
#     which `amp-lab check` writes), built only when asked. amp_lab_add_exercise_unit() adds more such
#     executables (the tests' starter, reference and wrong solutions).
# Every unit of an exercise is one small translation unit: built at -O0 (what the labs compute runs in
# LibTorch, not in this code) on a precompiled header of its own, so `amp-lab check` compiles one unit and
# links. build/exercises/exercises.json tells the runner what this build has.

set(AMP_LAB_EXERCISES_DIR ${PROJECT_BINARY_DIR}/exercises)
file(GLOB _amp_lab_starters RELATIVE ${PROJECT_SOURCE_DIR}/labs/exercises
     ${PROJECT_SOURCE_DIR}/labs/exercises/[0-9][0-9]_*.cpp)
list(SORT _amp_lab_starters)

# The exercise side of the runner, without LibTorch: reading a lab's blocks, the exercises' declarations
# and hints, building and judging a learner's file.
add_library(amp_lab_exercise_source STATIC ${PROJECT_SOURCE_DIR}/src/runner/exercise_source.cpp)
target_include_directories(amp_lab_exercise_source PUBLIC ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(amp_lab_exercise_source PUBLIC amp_lab::fmt)
amp_lab_warnings(amp_lab_exercise_source)
amp_lab_quick_compile(amp_lab_exercise_source)
# The exercises' catalog and hints, building and judging a learner's file, and its progress.
add_library(amp_lab_exercise STATIC ${PROJECT_SOURCE_DIR}/src/runner/exercise.cpp
            ${PROJECT_SOURCE_DIR}/src/runner/exercise_check.cpp)
target_link_libraries(amp_lab_exercise PUBLIC amp_lab_exercise_source amp_lab::quiz nlohmann_json::nlohmann_json)
amp_lab_warnings(amp_lab_exercise)
amp_lab_quick_compile(amp_lab_exercise UNITY)
add_executable(amp-lab-exercise-gen ${PROJECT_SOURCE_DIR}/src/runner/exercise_gen_main.cpp)
target_link_libraries(amp-lab-exercise-gen PRIVATE amp_lab_exercise_source)
set_target_properties(amp-lab-exercise-gen PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMP_LAB_EXERCISES_DIR}/bin)
amp_lab_warnings(amp-lab-exercise-gen)
amp_lab_quick_compile(amp-lab-exercise-gen)

# The exercises' precompiled header, src/runner/exercise_pch.h (the parts of LibTorch an AMP code uses and
# the amp library), at -O0: a header precompiled at -O3 is refused at -O0. It loads in about 4.5 s of CPU
# where the labs' <torch/torch.h> takes about 6.5 s, and that load is most of what a check compiles.
if(AMP_LAB_USE_PCH)
  add_library(amp_lab_exercise_pch STATIC ${PROJECT_SOURCE_DIR}/src/pch.cpp)
  target_link_libraries(amp_lab_exercise_pch PUBLIC amp_lab::framework)
  target_compile_options(amp_lab_exercise_pch PRIVATE -O0)
  amp_lab_warnings(amp_lab_exercise_pch)
  # Angle brackets keep the clone's path out of the generated header (ccache shares it between clones).
  target_precompile_headers(amp_lab_exercise_pch PRIVATE <runner/exercise_pch.h>)
endif()

# An exercise unit's compile options (the harness's too): the same as the header's, which requires it.
function(_amp_lab_exercise_options target)
  target_link_libraries(${target} PRIVATE amp_lab::framework)
  target_compile_options(${target} PRIVATE -O0)
  amp_lab_warnings(${target})
  if(AMP_LAB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM amp_lab_exercise_pch)
  endif()
endfunction()

# amp_lab_add_exercise_unit(TARGET STEM SOURCE [EXCLUDE_FROM_ALL]): an executable of exercise STEM's
# harness and SOURCE, a learner's file, in build/exercises/bin/.
function(amp_lab_add_exercise_unit target stem source)
  add_executable(${target} ${ARGN} ${source} $<TARGET_OBJECTS:exercise_${stem}_harness>)
  _amp_lab_exercise_options(${target})
  target_link_libraries(${target} PRIVATE amp_lab::lab_main)
  target_include_directories(${target} PRIVATE ${AMP_LAB_EXERCISES_DIR}/include)
  # The context header is generated: the unit waits for it.
  add_dependencies(${target} exercise_${stem}_generated)
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMP_LAB_EXERCISES_DIR}/bin)
endfunction()

set(_amp_lab_exercise_json "")
foreach(starter IN LISTS _amp_lab_starters)
  string(REGEX REPLACE "\\.cpp$" "" stem ${starter})
  string(SUBSTRING ${stem} 0 2 number)
  set(lab ${PROJECT_SOURCE_DIR}/labs/${stem}.cpp)
  if(NOT EXISTS ${lab})
    message(FATAL_ERROR "amp-lab: labs/exercises/${starter} has no lab labs/${stem}.cpp")
  endif()
  set(work ${AMP_LAB_EXERCISES_DIR}/${stem})
  set(context ${AMP_LAB_EXERCISES_DIR}/include/exercise/${stem}.h)
  file(MAKE_DIRECTORY ${work} ${AMP_LAB_EXERCISES_DIR}/include/exercise)

  add_custom_command(OUTPUT ${context} ${work}/reference.cpp
    COMMAND amp-lab-exercise-gen ${lab} labs/${stem}.cpp exercise/${stem}.h ${context} ${work}/reference.cpp
    DEPENDS amp-lab-exercise-gen ${lab}
    COMMENT "Exercise ${number}: the context and reference solution from labs/${stem}.cpp" VERBATIM)
  add_custom_target(exercise_${stem}_generated DEPENDS ${context} ${work}/reference.cpp)

  add_library(exercise_${stem}_harness OBJECT ${lab})
  target_compile_definitions(exercise_${stem}_harness PRIVATE AMP_LAB_EXERCISE)
  _amp_lab_exercise_options(exercise_${stem}_harness)
  # The lab's own AMP code as a learner's file: with the harness, the lab's executable (amp_lab_add_lab) and
  # the tests' reference solution.
  add_library(exercise_${stem}_reference OBJECT ${work}/reference.cpp)
  _amp_lab_exercise_options(exercise_${stem}_reference)
  target_include_directories(exercise_${stem}_reference PRIVATE ${AMP_LAB_EXERCISES_DIR}/include)
  add_dependencies(exercise_${stem}_reference exercise_${stem}_generated)

  # The learner's build: its unit is the learner's file behind a #line directive, written by amp-lab check;
  # the compiler's and the linker's messages are kept in compile.log and link.log, as they gave them.
  set_source_files_properties(${work}/learner.cpp PROPERTIES GENERATED TRUE)
  amp_lab_add_exercise_unit(exercise${number}_learner ${stem} ${work}/learner.cpp EXCLUDE_FROM_ALL)
  set_target_properties(exercise${number}_learner PROPERTIES OUTPUT_NAME exercise${number}_learner
    CXX_COMPILER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/amp_lab_exercise_log.sh;${work}/compile.log"
    CXX_LINKER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/amp_lab_exercise_log.sh;${work}/link.log")

  string(APPEND _amp_lab_exercise_json
         "${_amp_lab_exercise_sep}\n    \"${number}\": {\"stem\": \"${stem}\", \"target\": \"exercise${number}_learner\", "
         "\"executable\": \"$<TARGET_FILE:exercise${number}_learner>\", \"work\": \"${work}\"}")
  set(_amp_lab_exercise_sep ",")
  set_property(GLOBAL APPEND PROPERTY AMP_LAB_EXERCISE_STEMS ${stem})
endforeach()

# What amp-lab check needs to build here: this folder, the cmake that configured it, each exercise's target.
file(GENERATE OUTPUT ${AMP_LAB_EXERCISES_DIR}/exercises.json CONTENT
"{\n  \"source_dir\": \"${PROJECT_SOURCE_DIR}\",\n  \"build_dir\": \"${PROJECT_BINARY_DIR}\",
  \"cmake\": \"${CMAKE_COMMAND}\",\n  \"exercises\": {${_amp_lab_exercise_json}\n  }\n}\n")
