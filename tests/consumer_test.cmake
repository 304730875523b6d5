# The amp library used from outside the project: ctest runs this script (cmake -P) once per STEP.
#   install       cmake --install into a fresh prefix; the layout is complete and the public headers
#                 include only LibTorch, the standard library and each other
#   find_package  tests/consumer configured against that prefix (find_package(amp_lab), which finds
#                 LibTorch itself), built, run: its loss goes down; README.md's training program built
#                 beside it runs and saves its checkpoint
#   no_torch      the same with LibTorch hidden: configuring fails with the package's one clear message
#   runner        the installed amp-lab, run from another folder: --version, its installed quiz file,
#                 `quiz --answers abcdabcd --quick` over the first eight questions, its installed
#                 glossary and exercises
#   subdirectory  tests/consumer with -DAMP_LAB_SOURCE_DIR: amp-lab as a subproject builds only the
#                 library; the consumer runs and its loss goes down
# Arguments (-D): STEP, SOURCE_DIR, BINARY_DIR (amp-lab's build), WORK (a folder of this test's own),
# GENERATOR, CCACHE (ccache, if found: it serves the consumer builds too), VERSION,
# TORCH_DIR (for the subproject build, whose parent finds LibTorch the usual way), CXX_STANDARD (the one the
# found LibTorch asks for: 17 for 2.13, 20 for 2.14; the consumer is built with exactly -std=c++<it>).
cmake_minimum_required(VERSION 3.18)

set(prefix ${WORK}/prefix)
if(NOT CXX_STANDARD OR CXX_STANDARD LESS 17)
  set(CXX_STANDARD 17)  # the amp headers' own minimum
endif()
set(launcher)
if(CCACHE)
  # Paths relative to the clone (WORK is inside it), so other clones and later runs share the objects.
  set(ENV{CCACHE_BASEDIR} ${SOURCE_DIR})
  set(launcher -DCMAKE_CXX_COMPILER_LAUNCHER=${CCACHE})
endif()
set(consumer_src ${SOURCE_DIR}/tests/consumer)

function(run what)  # run(<what> COMMAND ...): fails the test with the command's output if it fails
  cmake_parse_arguments(PARSE_ARGV 1 R "" "WORKING_DIRECTORY;OUTPUT" "COMMAND")
  if(NOT R_WORKING_DIRECTORY)
    set(R_WORKING_DIRECTORY ${WORK})
  endif()
  string(TIMESTAMP start "%s")
  execute_process(COMMAND ${R_COMMAND} WORKING_DIRECTORY ${R_WORKING_DIRECTORY}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(TIMESTAMP end "%s")
  math(EXPR seconds "${end} - ${start}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (exit ${rc}):\n${out}\n${err}")
  endif()
  message(STATUS "${what}: ${seconds} s")
  if(R_OUTPUT)
    set(${R_OUTPUT} "${out}${err}" PARENT_SCOPE)
  endif()
endfunction()

function(require_match text regex what)
  if(NOT text MATCHES "${regex}")
    message(FATAL_ERROR "${what}: expected output matching '${regex}', got:\n${text}")
  endif()
endfunction()

# Configure and build tests/consumer in WORK/<name> at CXX_STANDARD, run it: every public header included,
# each component's misuse caught as amp::Error, both losses (GradScaler, bf16 weights with amp::Bf16Step) down.
function(build_and_run_consumer name)
  set(build ${WORK}/${name})
  file(REMOVE_RECURSE ${build})
  run("configure the consumer (${name})" COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${build} -G ${GENERATOR}
      -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_STANDARD=${CXX_STANDARD} ${launcher} ${ARGN})
  run("build the consumer (${name})" COMMAND ${CMAKE_COMMAND} --build ${build})
  run("run the consumer (${name})" COMMAND ${build}/amp_consumer OUTPUT out)
  message(STATUS "${out}")
  require_match("${out}" "C\\+\\+ 20${CXX_STANDARD}[0-9][0-9]," "the consumer's language standard")
  require_match("${out}" "\n([0-9]+) of ([0-9]+) misuses threw amp::Error; the loss went down with the GradScaler and went down with Bf16Step"
                "the consumer's misuses and training")
  string(REGEX MATCH "\n([0-9]+) of ([0-9]+) misuses" counted "${out}")
  if(NOT CMAKE_MATCH_1 EQUAL CMAKE_MATCH_2 OR CMAKE_MATCH_2 LESS 10)
    message(FATAL_ERROR "the consumer: ${CMAKE_MATCH_1} of ${CMAKE_MATCH_2} misuses threw amp::Error (10 expected)")
  endif()
endfunction()

if(STEP STREQUAL "install")
  file(REMOVE_RECURSE ${prefix})
  run("cmake --install" COMMAND ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
  foreach(f include/amp/autocast.h include/amp/grad_scaler.h include/amp/checkpoint.h include/amp/device_caps.h
            include/amp/nonfinite.h include/amp/bf16_update.h include/amp/bf16_step.h include/amp/clip.h include/amp/mx.h include/amp/nvfp4.h
            include/amp/custom_function.h include/amp/distributed.h include/amp/error.h
            lib/libamp_lab.a lib/cmake/amp_lab/amp_labConfig.cmake lib/cmake/amp_lab/amp_labConfigVersion.cmake
            lib/cmake/amp_lab/amp_labTargets.cmake lib/cmake/amp_lab/AmpLabTorch.cmake bin/amp-lab bin/lab01_master_weights bin/lab08_autocast_policy
            share/amp-lab/quiz.yaml share/amp-lab/glossary.yaml share/amp-lab/exercises.yaml
            share/doc/amp_lab/README.md share/doc/amp_lab/CHANGELOG.md)
    if(NOT EXISTS ${prefix}/${f})
      message(FATAL_ERROR "cmake --install left no ${f} in ${prefix}")
    endif()
  endforeach()
  # Public headers: <...> only from LibTorch (c10/, ATen/, torch/) or the standard library (no '/', no '.'),
  # "..." only a sibling under include/amp/.
  file(GLOB headers ${prefix}/include/amp/*.h)
  foreach(h IN LISTS headers)
    file(STRINGS ${h} includes REGEX "^[ \t]*#[ \t]*include")
    foreach(line IN LISTS includes)
      if(line MATCHES "<([^>]+)>")
        set(inc ${CMAKE_MATCH_1})
        if(NOT inc MATCHES "^(c10|ATen|torch)/" AND inc MATCHES "[/.]")
          message(FATAL_ERROR "${h}: '${line}' is neither LibTorch nor the standard library")
        endif()
      elseif(line MATCHES "\"([^\"]+)\"")
        if(NOT EXISTS ${prefix}/include/${CMAKE_MATCH_1} OR NOT CMAKE_MATCH_1 MATCHES "^amp/")
          message(FATAL_ERROR "${h}: '${line}' is not an installed amp header")
        endif()
      endif()
    endforeach()
  endforeach()
  list(LENGTH headers n)
  message(STATUS "installed into ${prefix}; ${n} public headers include only LibTorch, std and each other")

elseif(STEP STREQUAL "find_package")
  # Only amp_lab's prefix: the package config has to find LibTorch by itself. README.md's training program
  # is built there too, and runs to its end: 100 steps, then the checkpoint it saves.
  build_and_run_consumer(find_package -DCMAKE_PREFIX_PATH=${prefix} -DAMP_CONSUMER_README=${SOURCE_DIR}/README.md)
  set(build ${WORK}/find_package)
  run("run README.md's program" COMMAND ${build}/readme_program WORKING_DIRECTORY ${build})
  if(NOT EXISTS ${build}/ckpt.pt)
    message(FATAL_ERROR "README.md's program saved no ckpt.pt in ${build}")
  endif()
  message(STATUS "README.md's program built against the installed amp_lab, ran, and saved its checkpoint")

elseif(STEP STREQUAL "no_torch")
  set(build ${WORK}/no_torch)
  file(REMOVE_RECURSE ${build})
  execute_process(COMMAND ${CMAKE_COMMAND} -S ${consumer_src} -B ${build} -G ${GENERATOR}
                  -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_DISABLE_FIND_PACKAGE_Torch=ON
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "configuring without LibTorch succeeded:\n${out}${err}")
  endif()
  string(REGEX REPLACE "[ \t\r\n]+" " " flat "${err}")  # CMake wraps the message
  require_match("${flat}" "amp_lab ${VERSION} needs LibTorch .* found none\\. Point CMake at it: -DTorch_DIR="
                "configuring without LibTorch")
  message(STATUS "without LibTorch: exit ${rc}, the package says what to do")

elseif(STEP STREQUAL "runner")
  set(elsewhere ${WORK}/elsewhere)  # a working folder with no quiz.yaml in it
  file(REMOVE_RECURSE ${elsewhere})
  file(MAKE_DIRECTORY ${elsewhere})
  run("amp-lab --version" COMMAND ${prefix}/bin/amp-lab --version WORKING_DIRECTORY ${elsewhere} OUTPUT out)
  require_match("${out}" "^amp-lab ${VERSION}, built with LibTorch [0-9]+\\.[0-9]+\\.[0-9]+[^ ]* \\((CPU-only|CUDA) build\\)\n$"
                "amp-lab --version")
  run("amp-lab quiz --help" COMMAND ${prefix}/bin/amp-lab quiz --help WORKING_DIRECTORY ${elsewhere} OUTPUT out)
  string(REGEX REPLACE "[ \t\r\n]+" "" flat "${out}")  # the help text is wrapped, even inside the path
  string(REGEX REPLACE "[ \t\r\n]+" "" flat_prefix "${prefix}")
  require_match("${flat}" "\\(default:${flat_prefix}/share/amp-lab/quiz\\.yaml\\)" "the installed runner's quiz file")
  # A state folder of the test's own: the person's saved progress is neither read nor written.
  set(state XDG_STATE_HOME=${WORK}/state)
  file(REMOVE_RECURSE ${WORK}/state)
  run("amp-lab quiz --answers abcdabcd" COMMAND ${CMAKE_COMMAND} -E env --unset=AMP_LAB_QUIZ NO_COLOR=1 ${state}
      ${prefix}/bin/amp-lab quiz --only 1,2,3,4,5,6,7,8 --file-order --answers abcdabcd --quick --device cpu WORKING_DIRECTORY ${elsewhere} OUTPUT out)
  # Each question names its lab's folder relative to the project, not to the clone it was built in.
  foreach(lab 01_master_weights 02_loss_scaling 03_number_formats 04_fp32_accumulation 05_memory_throughput
              06_amp_api 07_bf16_scaling 08_autocast_policy)
    require_match("${out}" " labs/${lab}/" "the installed runner's lab folder names")
  endforeach()
  # Its glossary and exercises come from beside its quiz file.
  run("amp-lab glossary" COMMAND ${prefix}/bin/amp-lab glossary --no-color WORKING_DIRECTORY ${elsewhere} OUTPUT out)
  require_match("${out}" "\nloss scale: " "the installed runner's glossary")
  run("amp-lab exercises" COMMAND ${CMAKE_COMMAND} -E env ${state} ${prefix}/bin/amp-lab exercises --no-color WORKING_DIRECTORY ${elsewhere} OUTPUT out)
  require_match("${out}" "\n02 +the scale/step/update loop" "the installed runner's exercises")
  message(STATUS "the installed runner answered 8 questions from ${elsewhere}, glossed from its glossary.yaml")

elseif(STEP STREQUAL "subdirectory")
  build_and_run_consumer(subdirectory -DAMP_LAB_SOURCE_DIR=${SOURCE_DIR} -DTorch_DIR=${TORCH_DIR})
  # As a subproject amp-lab builds its library and nothing else: no runner, labs, benchmark or tests.
  set(sub ${WORK}/subdirectory/amp-lab)
  if(NOT EXISTS ${sub}/src/libamp_lab.a)
    message(FATAL_ERROR "no amp library in ${sub}/src")
  endif()
  foreach(unwanted bin tests src/runner labs src/bench)
    if(EXISTS ${sub}/${unwanted})
      message(FATAL_ERROR "amp-lab as a subproject built ${unwanted}/ (only the library is wanted)")
    endif()
  endforeach()
  message(STATUS "as a subproject, amp-lab built only libamp_lab.a")

else()
  message(FATAL_ERROR "consumer_test.cmake: unknown STEP '${STEP}'")
endif()
