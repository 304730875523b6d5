# Exercises: the learner writes a lab's AMP code and the lab's own checks judge it.
#
# A lab with an exercise has labs/<name>/exercise.cpp beside its lab.cpp and amp.cpp: the starter, which is
# amp.cpp with its key lines taken out. Its AMP code is what the learner writes, so the learner's file takes
# amp.cpp's place: `amp-lab check` writes it into build/exercises/<name>/learner.cpp and builds
# exerciseNN_learner, that file linked with the lab's own lab.cpp object (lab_<name>_lab, built once, at the
# labs' profile). The tests build the starter and the lab's own amp.cpp the same way
# (amp_lab_add_exercise_unit), and judge their kept mistakes (tests/exercises/NN.yaml, mutations of amp.cpp)
# through `amp-lab check`'s own build of exerciseNN_learner. build/exercises/exercises.json tells the runner
# what this build has.
#
# The judge's profile: a learner's file compiles at -O0 (what the lab computes runs in LibTorch's kernels and
# the lab's own -O3 object, not in this code) on a precompiled header of its own, src/runner/exercise_pch.h
# (the LibTorch and amp headers nearly every exercise uses, and no more: see there why): lab 09's amp.cpp
# on it compiles in 3.7 CPU s, nearly all of it the templates GCC instantiates at the end of any unit on
# LibTorch's headers, and that is most of what a check costs. A header precompiled at -O3 (the labs', src/lab/libtorch.h) is
# refused at -O0, hence a header of its own.

set(AMP_LAB_EXERCISES_DIR ${PROJECT_BINARY_DIR}/exercises)

if(AMP_LAB_USE_PCH)
  add_library(amp_lab_exercise_pch STATIC ${PROJECT_SOURCE_DIR}/src/pch.cpp)
  target_link_libraries(amp_lab_exercise_pch PUBLIC amp_lab::framework)
  target_compile_options(amp_lab_exercise_pch PRIVATE -O0)
  amp_lab_warnings(amp_lab_exercise_pch)
  # Angle brackets keep the clone's path out of the generated header (ccache shares it between clones).
  target_precompile_headers(amp_lab_exercise_pch PRIVATE <runner/exercise_pch.h>)
endif()

# amp_lab_add_exercise_unit(TARGET NAME SOURCE [EXCLUDE_FROM_ALL]): an executable of lab NAME with SOURCE,
# a learner's file, in place of its amp.cpp, at the judge's profile, in build/exercises/bin/. SOURCE
# includes "amp.h" from the lab's folder.
function(amp_lab_add_exercise_unit target name source)
  add_executable(${target} ${ARGN} ${source} $<TARGET_OBJECTS:lab_${name}_lab>)
  target_link_libraries(${target} PRIVATE amp_lab::framework amp_lab::lab_main)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR}/labs/${name})
  target_compile_options(${target} PRIVATE -O0)
  amp_lab_warnings(${target})
  if(AMP_LAB_USE_PCH)
    target_precompile_headers(${target} REUSE_FROM amp_lab_exercise_pch)
  endif()
  set_target_properties(${target} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${AMP_LAB_EXERCISES_DIR}/bin)
endfunction()

# amp_lab_add_exercise(NAME): exercise NN's learner executable, exerciseNN_learner, built only when asked.
# Its unit is the learner's file behind a #line directive, written by amp-lab check; the compiler's and the
# linker's messages are kept in compile.log and link.log, as they gave them. The compile goes through the
# project's launcher (ccache, where there is one: a unit on the exercises' precompiled header costs 4-5 CPU
# s whatever it holds), so that a file checked again unchanged, or a kept mutation in a second test run,
# is a cache hit; ccache replays the compiler's messages on a hit, so compile.log holds them all the same.
function(amp_lab_add_exercise name)
  string(SUBSTRING ${name} 0 2 number)
  set(work ${AMP_LAB_EXERCISES_DIR}/${name})
  file(MAKE_DIRECTORY ${work})
  set_source_files_properties(${work}/learner.cpp PROPERTIES GENERATED TRUE)
  amp_lab_add_exercise_unit(exercise${number}_learner ${name} ${work}/learner.cpp EXCLUDE_FROM_ALL)
  set_target_properties(exercise${number}_learner PROPERTIES
    CXX_COMPILER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/amp_lab_exercise_log.sh;${work}/compile.log;${CMAKE_CXX_COMPILER_LAUNCHER}"
    CXX_LINKER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/amp_lab_exercise_log.sh;${work}/link.log")
  # What the learner's unit compiles and links against, and nothing of its own: with a Ninja build,
  # `amp-lab check` builds this under the build folder's lock, then runs the two commands Ninja has for the
  # learner's object and executable itself, outside that lock, so that checks of different exercises (and
  # the tests' mutations) compile at once.
  add_custom_target(exercise${number}_learner_inputs)
  foreach(dep lab_${name}_lab amp_lab::framework amp_lab::lab_main)
    get_target_property(real ${dep} ALIASED_TARGET)  # add_dependencies takes no alias
    if(NOT real)
      set(real ${dep})
    endif()
    add_dependencies(exercise${number}_learner_inputs ${real})
  endforeach()
  if(AMP_LAB_USE_PCH)
    add_dependencies(exercise${number}_learner_inputs amp_lab_exercise_pch)
  endif()
endfunction()

# amp_lab_write_exercises_json(NAME...): build/exercises/exercises.json, what amp-lab check needs to build
# here: this folder, the cmake that configured it, each exercise's target, executable and work folder, and
# its lab's own executable (the lab's amp.cpp: the checks it declares and the time it takes, for the judge).
function(amp_lab_write_exercises_json)
  set(entries "")
  set(sep "")
  foreach(name IN LISTS ARGN)
    if(NOT TARGET lab_${name}_lab)
      message(FATAL_ERROR "amp-lab: labs/${name}/ has no amp_lab_add_lab(${name}) line in labs/CMakeLists.txt")
    endif()
    if(EXISTS ${PROJECT_SOURCE_DIR}/labs/${name}/exercise.cpp)
      string(SUBSTRING ${name} 0 2 number)
      string(APPEND entries "${sep}\n    \"${number}\": {\"stem\": \"${name}\", \"target\": \"exercise${number}_learner\", "
             "\"executable\": \"$<TARGET_FILE:exercise${number}_learner>\", \"work\": \"${AMP_LAB_EXERCISES_DIR}/${name}\", "
             "\"lab_target\": \"lab${name}\", \"lab_executable\": \"$<TARGET_FILE:lab${name}>\", "
             "\"inputs_target\": \"exercise${number}_learner_inputs\", "
             "\"object\": \"$<TARGET_OBJECTS:exercise${number}_learner>\"}")
      set(sep ",")
    endif()
  endforeach()
  file(GENERATE OUTPUT ${AMP_LAB_EXERCISES_DIR}/exercises.json CONTENT
"{\n  \"source_dir\": \"${PROJECT_SOURCE_DIR}\",\n  \"build_dir\": \"${PROJECT_BINARY_DIR}\",
  \"cmake\": \"${CMAKE_COMMAND}\",\n  \"generator\": \"${CMAKE_GENERATOR}\",\n  \"make_program\": \"${CMAKE_MAKE_PROGRAM}\",\n  \"exercises\": {${entries}\n  }\n}\n")
endfunction()
