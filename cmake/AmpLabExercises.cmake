# Exercises: the learner writes a lab's AMP code and the lab's own checks judge it.
#
# A lab with an exercise has labs/<name>/exercise.cpp beside its lab.cpp and amp.cpp: the starter, which is
# amp.cpp with its key lines taken out. Its AMP code is what the learner writes, so the learner's file takes
# amp.cpp's place: `amp-lab check` writes it into build/exercises/<name>/learner.cpp and builds
# exerciseNN_learner, that file linked with the lab's own lab.cpp object (lab_<name>_lab, built once, at the
# labs' profile). The tests build the starter and their wrong solutions the same way
# (amp_lab_add_exercise_unit). build/exercises/exercises.json tells the runner what this build has.
#
# The judge's profile: a learner's file compiles at -O0 (what the lab computes runs in LibTorch's kernels and
# the lab's own -O3 object, not in this code) on a precompiled header of its own, src/runner/exercise_pch.h
# (the parts of LibTorch an AMP code uses and the amp library): an empty file on it compiles in 2.5 s, and
# that is most of what a check compiles. A header precompiled at -O3 (the labs', src/lab/libtorch.h) is
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
# linker's messages are kept in compile.log and link.log, as they gave them.
function(amp_lab_add_exercise name)
  string(SUBSTRING ${name} 0 2 number)
  set(work ${AMP_LAB_EXERCISES_DIR}/${name})
  file(MAKE_DIRECTORY ${work})
  set_source_files_properties(${work}/learner.cpp PROPERTIES GENERATED TRUE)
  amp_lab_add_exercise_unit(exercise${number}_learner ${name} ${work}/learner.cpp EXCLUDE_FROM_ALL)
  set_target_properties(exercise${number}_learner PROPERTIES
    CXX_COMPILER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/amp_lab_exercise_log.sh;${work}/compile.log"
    CXX_LINKER_LAUNCHER "sh;${PROJECT_SOURCE_DIR}/cmake/amp_lab_exercise_log.sh;${work}/link.log")
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
             "\"lab_target\": \"lab${name}\", \"lab_executable\": \"$<TARGET_FILE:lab${name}>\"}")
      set(sep ",")
    endif()
  endforeach()
  file(GENERATE OUTPUT ${AMP_LAB_EXERCISES_DIR}/exercises.json CONTENT
"{\n  \"source_dir\": \"${PROJECT_SOURCE_DIR}\",\n  \"build_dir\": \"${PROJECT_BINARY_DIR}\",
  \"cmake\": \"${CMAKE_COMMAND}\",\n  \"exercises\": {${entries}\n  }\n}\n")
endfunction()

# amp_lab_add_kept_units(NAME [REFERENCE FILE] FILE...): the learner files the tests keep for lab NAME's
# exercise (tests/exercises/NN_*.cpp: wrong solutions and correct variants), each an executable
# exercise_kept_<file name> in build/exercises/bin/ at the judge's profile, as amp_lab_add_exercise_unit
# makes one, but compiled in one unit; with REFERENCE, also that file (the lab's own amp.cpp, what
# `amp-lab exercise NN --solution` prints) as the executable exerciseNN_reference. A unit on the exercises' precompiled header spends about 4 s before
# its first line, whatever the file holds (GCC instantiates the LibTorch templates the header leaves
# pending), so the 10-14 files of an exercise as one unit pay that once. In the unit each file, after a copy
# of the lab's amp.h, is inside a namespace of its own, amp_lab_kept_<file name>, so that its labNN:: is
# amp_lab_kept_<file name>::labNN:: (its types too, so that no call finds another file's function by its
# arguments); each executable's link then points the lab's calls at its file's definitions
# (cmake/amp_lab_kept_links.sh). The files are copied in when CMake configures, which it does again when one
# of them or amp.h changes.
find_program(AMP_LAB_CXXFILT NAMES c++filt)
# A file's text for the unit, after a newline: its #include and #pragma once lines made comments.
function(_amp_lab_kept_text file out)
  file(READ ${file} text)
  string(REGEX REPLACE "\n#(include|pragma once)" "\n// #\\1" text "\n${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()
function(amp_lab_add_kept_units name)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "REFERENCE" "")
  string(SUBSTRING ${name} 0 2 number)
  # Each file's stem (its namespace and link map), executable and the path its messages name.
  set(files "")
  set(stems "")
  set(targets "")
  set(shown "")
  if(arg_REFERENCE)
    list(APPEND files ${arg_REFERENCE})
    list(APPEND stems ${number}_reference)
    list(APPEND targets exercise${number}_reference)
    file(RELATIVE_PATH path ${PROJECT_SOURCE_DIR} ${arg_REFERENCE})
    list(APPEND shown ${path})
  endif()
  foreach(file IN LISTS arg_UNPARSED_ARGUMENTS)
    get_filename_component(stem ${file} NAME_WE)
    list(APPEND files ${file})
    list(APPEND stems ${stem})
    list(APPEND targets exercise_kept_${stem})
    list(APPEND shown tests/exercises/${stem}.cpp)
  endforeach()
  if(NOT CMAKE_NM OR NOT AMP_LAB_CXXFILT)  # no way to map the links: one unit per file
    foreach(file target IN ZIP_LISTS files targets)
      amp_lab_add_exercise_unit(${target} ${name} ${file})
    endforeach()
    return()
  endif()
  # The unit: every #include line first, at file scope (in a namespace they would declare the headers' names
  # there), then what amp.h has before its namespace labNN (forward declarations), then amp.h's namespace and
  # each file inside a namespace of the file's, their #include lines made comments (so that the line numbers
  # hold for the compiler's messages).
  set(work ${AMP_LAB_EXERCISES_DIR}/kept/${name})
  set(amp_h ${PROJECT_SOURCE_DIR}/labs/${name}/amp.h)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${amp_h} ${files})  # read here
  set(includes "")
  foreach(source IN LISTS amp_h files)
    file(STRINGS ${source} lines REGEX "^#include ")
    list(APPEND includes ${lines})
  endforeach()
  list(REMOVE_DUPLICATES includes)
  list(FILTER includes EXCLUDE REGEX "\"amp.h\"")
  list(JOIN includes "\n" includes)
  _amp_lab_kept_text(${amp_h} text)
  string(FIND "${text}" "\nnamespace lab${number} {" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "labs/${name}/amp.h has no line 'namespace lab${number} {'")
  endif()
  string(SUBSTRING "${text}" 1 ${at} head)  # its first line to the line before the namespace
  math(EXPR at "${at} + 1")
  string(SUBSTRING "${text}" ${at} -1 amp_body)
  string(REGEX MATCHALL "\n" newlines "\n${head}")
  list(LENGTH newlines body_line)
  set(bodies "#line 1 \"labs/${name}/amp.h\"\n${head}")
  foreach(file stem path IN ZIP_LISTS files stems shown)
    _amp_lab_kept_text(${file} text)
    string(SUBSTRING "${text}" 1 -1 text)
    string(APPEND bodies "\nnamespace amp_lab_kept_${stem} {\n#line ${body_line} \"labs/${name}/amp.h\"\n${amp_body}"
           "#line 1 \"${path}\"\n${text}}  // namespace amp_lab_kept_${stem}\n")
  endforeach()
  set(unit "// Written by amp_lab_add_kept_units (cmake/AmpLabExercises.cmake): exercise ${number}'s kept files.\n")
  string(APPEND unit "${includes}\n${bodies}")
  set(old "")
  if(EXISTS ${work}/kept.cpp)
    file(READ ${work}/kept.cpp old)
  endif()
  if(NOT old STREQUAL unit)  # rewritten only when it changed, so that an unchanged one is not compiled again
    file(WRITE ${work}/kept.cpp "${unit}")
  endif()
  add_library(exercise_kept_${number} OBJECT ${work}/kept.cpp)
  target_link_libraries(exercise_kept_${number} PRIVATE amp_lab::framework)
  target_compile_options(exercise_kept_${number} PRIVATE -O0)
  amp_lab_warnings(exercise_kept_${number})
  if(AMP_LAB_USE_PCH)
    target_precompile_headers(exercise_kept_${number} REUSE_FROM amp_lab_exercise_pch)
  endif()
  set(maps ${stems})
  list(TRANSFORM maps PREPEND ${work}/)
  list(TRANSFORM maps APPEND .rsp)
  add_custom_command(OUTPUT ${maps}
    COMMAND sh ${PROJECT_SOURCE_DIR}/cmake/amp_lab_kept_links.sh ${CMAKE_NM} ${AMP_LAB_CXXFILT} ${work}
            $<TARGET_OBJECTS:exercise_kept_${number}> "$<JOIN:$<TARGET_OBJECTS:lab_${name}_lab>,:>" ${stems}
    DEPENDS exercise_kept_${number} lab_${name}_lab $<TARGET_OBJECTS:exercise_kept_${number}>
            $<TARGET_OBJECTS:lab_${name}_lab> ${PROJECT_SOURCE_DIR}/cmake/amp_lab_kept_links.sh
    COMMENT "Mapping the links of exercise ${number}'s kept files" VERBATIM)
  add_custom_target(exercise_kept_${number}_links DEPENDS ${maps})
  foreach(target map IN ZIP_LISTS targets maps)
    add_executable(${target} $<TARGET_OBJECTS:exercise_kept_${number}> $<TARGET_OBJECTS:lab_${name}_lab>)
    target_link_libraries(${target} PRIVATE amp_lab::framework amp_lab::lab_main)
    target_link_options(${target} PRIVATE "@${map}")
    set_target_properties(${target} PROPERTIES LINK_DEPENDS ${map} RUNTIME_OUTPUT_DIRECTORY ${AMP_LAB_EXERCISES_DIR}/bin)
    add_dependencies(${target} exercise_kept_${number}_links)
  endforeach()
endfunction()
