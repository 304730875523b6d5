# cmake/AmpLabTorch.cmake on made-up folders, so that every way it finds things is tested on any machine:
# a fake LibTorch prefix (CPU-only or CUDA) inside a fake site-packages with pip's nvidia/ folders, a fake CUDA
# toolkit, a fake nvidia-smi and a fake nvcc wrapper. ctest runs this script (cmake -P) once per STEP:
#   cpu        a CPU-only LibTorch: one line says so, nothing CUDA is set
#   cuda_path  $CUDA_PATH's toolkit, the visible GPUs' capabilities (deduplicated), nvrtc, math headers and
#              nccl.h from site-packages/nvidia (not its builtins or alt libraries), CMAKE_CUDA_COMPILER the
#              toolkit's nvcc; a second configure says the same line
#   defaults   $CUDA_HOME's toolkit; nvidia-smi failing: TORCH_CUDA_ARCH_LIST 9.0; the toolkit's own nvrtc,
#              math headers and nccl.h (before pip's); TORCH_CUDA_ARCH_LIST from the environment or -D is
#              kept and said to be
#   bad_root   $CUDA_PATH naming no toolkit: configuring fails with one line naming it
#   nvcc       a wrapper script nvcc on PATH leads to the toolkit nvcc reports, not to the wrapper's folder
#   cxx_std    the C++ standard from ATen/ATen.h's check (C++17, C++20), else from the version
# Arguments (-D): STEP, SOURCE_DIR (amp-lab), WORK (a folder of this test's own), GENERATOR.
cmake_minimum_required(VERSION 3.18)

set(fake ${WORK}/${STEP})
file(REMOVE_RECURSE ${fake})
set(site ${fake}/site-packages)
set(torch ${site}/torch)
set(tk ${fake}/cuda-12.8)
set(fakebin ${fake}/bin)

function(touch)
  foreach(f ${ARGN})
    get_filename_component(d ${f} DIRECTORY)
    file(MAKE_DIRECTORY ${d})
    file(WRITE ${f} "")
  endforeach()
endfunction()

function(script path text)  # an executable shell script
  get_filename_component(d ${path} DIRECTORY)
  file(MAKE_DIRECTORY ${d})
  file(WRITE ${path} "#!/bin/sh\n${text}\n")
  execute_process(COMMAND chmod +x ${path})
endfunction()

function(fake_torch cuda)
  file(MAKE_DIRECTORY ${torch}/share/cmake/Torch)
  file(WRITE ${torch}/share/cmake/Torch/TorchConfig.cmake "")
  file(WRITE ${torch}/share/cmake/Torch/TorchConfigVersion.cmake "set(PACKAGE_VERSION \"9.9.0\")\n")
  touch(${torch}/lib/libtorch_cpu.so)
  if(cuda)
    touch(${torch}/lib/libtorch_cuda.so ${site}/nvidia/cu13/lib/libnvrtc.so.13 ${site}/nvidia/cu13/include/cublas_v2.h
          ${site}/nvidia/cu13/lib/libnvrtc-builtins.so.13.0 ${site}/nvidia/cu13/lib/libnvrtc.alt.so.13
          ${site}/nvidia/cudnn/include/cudnn.h ${site}/nvidia/nccl/include/nccl.h)
  endif()
endfunction()

function(fake_toolkit)  # fake_toolkit([WITH_LIBS]): nvcc and the runtime headers; WITH_LIBS adds nvrtc, cuBLAS, NCCL
  touch(${tk}/include/cuda_runtime_api.h)
  file(WRITE ${tk}/include/cuda.h "#define CUDA_VERSION 12080\n")
  script(${tk}/bin/nvcc "exit 0")
  if(ARGN)
    touch(${tk}/lib64/libnvrtc.so ${tk}/include/cublas_v2.h ${tk}/include/nccl.h)
  endif()
endfunction()

# Configures a project that calls amp_lab_prepare_torch() with the fake LibTorch on CMAKE_PREFIX_PATH, in an
# environment of only what is given (PATH: the fake bin folder and the system's). Sets rc, line (the
# "amp-lab: ..." line) and result (what was set) in the caller.
function(configure build)  # configure(<build folder> [VAR=value...] [ARGS -D...])
  cmake_parse_arguments(PARSE_ARGV 1 C "" "" "ARGS")
  set(proj ${fake}/project)
  file(MAKE_DIRECTORY ${proj})
  file(WRITE ${proj}/CMakeLists.txt "cmake_minimum_required(VERSION 3.18)\nproject(fake NONE)\n"
       "include(\"${SOURCE_DIR}/cmake/AmpLabTorch.cmake\")\namp_lab_prepare_torch()\n"
       "message(STATUS \"RESULT cuda=\${AMP_LAB_TORCH_CUDA} root=\${CUDA_TOOLKIT_ROOT_DIR} \"\n"
       "  \"nvcc=\${CMAKE_CUDA_COMPILER} arch=\${TORCH_CUDA_ARCH_LIST} nvrtc=\${CUDA_nvrtc_LIBRARY} \"\n"
       "  \"math=\${_amp_lab_cuda_math_include}\")\n")
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=CUDA_PATH --unset=CUDA_HOME --unset=TORCH_CUDA_ARCH_LIST
                          --unset=CUDACXX --unset=CMAKE_PREFIX_PATH --unset=Torch_ROOT PATH=${fakebin}:/usr/bin:/bin
                          ${C_UNPARSED_ARGUMENTS} ${CMAKE_COMMAND} -S ${proj} -B ${fake}/${build} -G ${GENERATOR}
                          -DCMAKE_PREFIX_PATH=${torch} ${C_ARGS}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  set(line "")
  if(out MATCHES "-- (amp-lab: [^\n]*)")
    set(line "${CMAKE_MATCH_1}")
  endif()
  set(result "")
  if(out MATCHES "-- RESULT ([^\n]*)")
    set(result "${CMAKE_MATCH_1}")
  endif()
  string(REGEX REPLACE "[ \t\r\n]+" " " flat_err "${err}")  # CMake wraps messages
  set(rc ${rc} PARENT_SCOPE)
  set(line "${line}" PARENT_SCOPE)
  set(result "${result}" PARENT_SCOPE)
  set(err "${flat_err}" PARENT_SCOPE)
  message(STATUS "${build}: exit ${rc}\n  ${line}\n  ${result}")
endfunction()

function(expect text part what)
  string(FIND "${text}" "${part}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: expected '${part}' in:\n${text}")
  endif()
endfunction()

function(expect_ok)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "configure failed (exit ${rc}):\n${err}")
  endif()
endfunction()

if(STEP STREQUAL "cpu")
  fake_torch(OFF)
  fake_toolkit()
  configure(b CUDA_PATH=${tk})
  expect_ok()
  expect("${line}" "amp-lab: CPU-only LibTorch 9.9.0 at ${torch}: no CUDA set-up needed" "the line")
  expect("${result}" "cuda=OFF root= nvcc= arch= nvrtc= math=" "nothing CUDA set")

elseif(STEP STREQUAL "cuda_path")
  fake_torch(ON)
  fake_toolkit()
  script(${fakebin}/nvidia-smi "echo 8.6; echo 8.6; echo 9.0")
  configure(b CUDA_PATH=${tk})
  expect_ok()
  expect("${line}" "amp-lab: CUDA LibTorch 9.9.0: toolkit 12.8 at ${tk} ($CUDA_PATH), TORCH_CUDA_ARCH_LIST 8.6 9.0 (the visible GPUs), nvrtc ${site}/nvidia/cu13/lib/libnvrtc.so.13, math headers ${site}/nvidia/cu13/include, nccl.h ${site}/nvidia/nccl/include" "the line")
  expect("${result}" "cuda=ON root=${tk} nvcc=${tk}/bin/nvcc arch=8.6;9.0 nvrtc=${site}/nvidia/cu13/lib/libnvrtc.so.13 math=${site}/nvidia/cu13/include;${site}/nvidia/nccl/include" "what was set")
  set(first "${line}")
  configure(b CUDA_PATH=${tk})  # again, in the same build folder: the cache holds what was found
  expect_ok()
  if(NOT line STREQUAL first)
    message(FATAL_ERROR "the second configure said\n  ${line}\nthe first\n  ${first}")
  endif()

elseif(STEP STREQUAL "defaults")
  fake_torch(ON)
  fake_toolkit(WITH_LIBS)
  script(${fakebin}/nvidia-smi "echo 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver'; exit 9")
  configure(b CUDA_HOME=${tk})
  expect_ok()
  expect("${line}" "toolkit 12.8 at ${tk} ($CUDA_HOME), TORCH_CUDA_ARCH_LIST 9.0 (no GPU visible: the default, an H200's), nvrtc the toolkit's, math headers the toolkit's, nccl.h the toolkit's" "the line")
  expect("${result}" "arch=9.0 nvrtc= math=" "Torch's own lookup left to find nvrtc")
  configure(env CUDA_HOME=${tk} TORCH_CUDA_ARCH_LIST=7.5)
  expect_ok()
  expect("${line}" "TORCH_CUDA_ARCH_LIST 7.5 (from the environment)" "the environment's list")
  configure(set CUDA_HOME=${tk} ARGS -DTORCH_CUDA_ARCH_LIST=8.0)
  expect_ok()
  expect("${line}" "TORCH_CUDA_ARCH_LIST 8.0 (as set)" "the list set with -D")

elseif(STEP STREQUAL "bad_root")
  fake_torch(ON)
  configure(b CUDA_PATH=${fake}/no-such-toolkit)
  if(rc EQUAL 0)
    message(FATAL_ERROR "configuring with CUDA_PATH naming no toolkit succeeded")
  endif()
  expect("${err}" "amp-lab: $CUDA_PATH=${fake}/no-such-toolkit is not a CUDA toolkit (no include/cuda_runtime_api.h and bin/nvcc there)" "the error")

elseif(STEP STREQUAL "nvcc")
  fake_toolkit()
  # A wrapper like /usr/local/bin/nvcc: its folder's parent is no toolkit; the driver's dry run names the real one.
  script(${fakebin}/nvcc "echo '#$ _NVVM_BRANCH_=nvvm' >&2; echo '#$ _HERE_=${tk}/bin' >&2; echo '#$ TOP=${tk}/bin/..' >&2")
  set(ENV{PATH} "${fakebin}:/usr/bin:/bin")
  include(${SOURCE_DIR}/cmake/AmpLabTorch.cmake)
  _amp_lab_toolkit_of_nvcc(root)
  if(NOT root STREQUAL tk)
    message(FATAL_ERROR "the nvcc wrapper led to '${root}', not to ${tk}")
  endif()
  message(STATUS "the nvcc wrapper in ${fakebin} led to ${root}")

elseif(STEP STREQUAL "cxx_std")
  include(${SOURCE_DIR}/cmake/AmpLabTorch.cmake)
  foreach(case "201703L;2.13.0;17" "202002L;2.14.1;20" ";2.14.1;20" ";2.13.0;17")
    list(GET case 0 cplusplus)
    list(GET case 1 Torch_VERSION)
    list(GET case 2 want)
    set(TORCH_INCLUDE_DIRS ${fake}/include-${Torch_VERSION}-${cplusplus} ${fake}/other)
    file(MAKE_DIRECTORY ${TORCH_INCLUDE_DIRS})
    if(cplusplus)
      file(WRITE ${fake}/include-${Torch_VERSION}-${cplusplus}/ATen/ATen.h
           "#pragma once\n\n#if !defined(_MSC_VER) && __cplusplus < ${cplusplus}\n#error C++ or later\n#endif\n")
    endif()
    amp_lab_torch_cxx_standard(std)
    if(NOT std EQUAL want)
      message(FATAL_ERROR "ATen.h check '${cplusplus}', version ${Torch_VERSION}: C++${std}, expected C++${want}")
    endif()
  endforeach()

else()
  message(FATAL_ERROR "torch_setup_test.cmake: unknown STEP '${STEP}'")
endif()
