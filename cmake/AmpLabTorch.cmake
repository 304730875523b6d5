# What it takes to find LibTorch and to use it, for this project (CMakeLists.txt) and for the installed
# package (amp_labConfig.cmake, which installs this file beside itself):
#
#   amp_lab_prepare_torch([HINTS dir...])  before find_package(Torch). With a CUDA LibTorch, does what Torch's
#       CMake config needs and cannot do by itself, and says in one line what it found:
#         - the CUDA toolkit: CUDA_TOOLKIT_ROOT_DIR if set, else $CUDA_PATH, $CUDA_HOME, /usr/local/cuda, else
#           the folder of the nvcc on PATH as nvcc itself reports it (Torch's FindCUDA takes the folder
#           above `nvcc` on PATH, which for a wrapper script such as /usr/local/bin/nvcc is no toolkit);
#           CMAKE_CUDA_COMPILER is that toolkit's nvcc;
#         - TORCH_CUDA_ARCH_LIST: as set (-D or environment), else the compute capabilities of the visible
#           GPUs (nvidia-smi), else 9.0 (the H200 the project runs on when one is lent). This project
#           compiles no CUDA code, so the list only has to be valid; setting it also skips Torch's GPU
#           detection, which fails under CMake 3.25 when the project asks for C++20 (it cannot pass
#           C++20 to nvcc);
#         - nvrtc (CUDA_nvrtc_LIBRARY), which Torch's config links: the toolkit's libnvrtc.so, else the one
#           next to Torch (pip's nvidia/*/lib ships only libnvrtc.so.<major>; a LibTorch archive has
#           lib/libnvrtc-<hash>.so.<major>);
#         - the CUDA math-library headers (cublas_v2.h ...), needed by ATen/cuda/CUDAContext.h, from pip's
#           nvidia/*/include when the toolkit has none (a toolkit without the math libraries);
#         - nccl.h, which c10d's NCCL backend needs (src/amp/distributed.cpp, lab 13): the toolkit's or
#           LibTorch's, else pip's nvidia/nccl/include (or another nvidia/*/include that has it), else the
#           system's; without one amp-lab builds without NCCL.
#       With a CPU-only LibTorch it only says so. Sets AMP_LAB_TORCH_CUDA (ON/OFF) in the caller's scope.
#   amp_lab_use_torch_cuda_headers()  after find_package(Torch): adds the math and NCCL headers found above,
#       after the toolkit's own headers, to CUDA::cudart (which every CUDA LibTorch target links).
#   amp_lab_torch_cxx_standard(<var>)  after find_package(Torch): the C++ standard the found LibTorch's
#       headers require (17, 20, ...), read from Torch: its targets' INTERFACE_COMPILE_FEATURES if it
#       declares one, else the `__cplusplus < ...` check at the top of its ATen/ATen.h (2.13: C++17,
#       2.14: C++20), else from its version (2.14 and later: 20).
# Requires CMake 3.18 (the project's minimum).

# The TorchConfig.cmake find_package(Torch) is going to use, located the way find_package looks for it
# (Torch_DIR, Torch_ROOT, CMAKE_PREFIX_PATH, the environment's CMAKE_PREFIX_PATH, then the hints).
function(_amp_lab_locate_torch_config out_dir)
  set(dirs)
  if(Torch_DIR)
    list(APPEND dirs "${Torch_DIR}")
  endif()
  set(prefixes ${Torch_ROOT} $ENV{Torch_ROOT} ${CMAKE_PREFIX_PATH})
  if(DEFINED ENV{CMAKE_PREFIX_PATH})
    string(REPLACE ":" ";" env_prefixes "$ENV{CMAKE_PREFIX_PATH}")
    list(APPEND prefixes ${env_prefixes})
  endif()
  list(APPEND prefixes ${ARGN})
  foreach(p IN LISTS prefixes)
    list(APPEND dirs "${p}" "${p}/Torch" "${p}/share/cmake/Torch" "${p}/lib/cmake/Torch")
  endforeach()
  foreach(d IN LISTS dirs)
    if(EXISTS "${d}/TorchConfig.cmake")
      get_filename_component(d "${d}" ABSOLUTE)
      set(${out_dir} "${d}" PARENT_SCOPE)
      return()
    endif()
  endforeach()
  set(${out_dir} "" PARENT_SCOPE)
endfunction()

function(_amp_lab_is_toolkit dir out)
  if(dir AND EXISTS "${dir}/include/cuda_runtime_api.h" AND EXISTS "${dir}/bin/nvcc")
    set(${out} TRUE PARENT_SCOPE)
  else()
    set(${out} FALSE PARENT_SCOPE)
  endif()
endfunction()

# The toolkit folder of the nvcc on PATH as nvcc reports it (its driver prints `_HERE_=<toolkit>/bin` on a
# dry run), so that a wrapper script or a symbolic link leads to the real toolkit.
function(_amp_lab_toolkit_of_nvcc out)
  set(${out} "" PARENT_SCOPE)
  find_program(_amp_lab_nvcc_on_path nvcc)
  set(nvcc "${_amp_lab_nvcc_on_path}")
  unset(_amp_lab_nvcc_on_path CACHE)
  if(NOT nvcc)
    return()
  endif()
  execute_process(COMMAND "${nvcc}" --dryrun -c -x cu /dev/null -o /dev/null
                  RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e TIMEOUT 30)
  if("${o}${e}" MATCHES "_HERE_=([^\r\n]+)")
    get_filename_component(root "${CMAKE_MATCH_1}/.." ABSOLUTE)
  else()
    get_filename_component(real "${nvcc}" REALPATH)
    get_filename_component(root "${real}/../.." ABSOLUTE)
  endif()
  set(${out} "${root}" PARENT_SCOPE)
endfunction()

macro(amp_lab_prepare_torch)
  cmake_parse_arguments(_amp_lab_pt "" "" "HINTS" ${ARGN})
  _amp_lab_prepare_torch_impl(AMP_LAB_TORCH_CUDA _amp_lab_cuda_math_include ${_amp_lab_pt_HINTS})
endmacro()

function(_amp_lab_prepare_torch_impl out_cuda out_math)
  set(${out_cuda} OFF PARENT_SCOPE)
  set(${out_math} "" PARENT_SCOPE)
  _amp_lab_locate_torch_config(config_dir ${ARGN})
  if(NOT config_dir)
    return()  # find_package(Torch) says what it could not find
  endif()
  get_filename_component(torch_prefix "${config_dir}/../../.." ABSOLUTE)
  set(version "")
  if(EXISTS "${config_dir}/TorchConfigVersion.cmake")
    file(STRINGS "${config_dir}/TorchConfigVersion.cmake" v REGEX "set\\(PACKAGE_VERSION \"[^\"]+\"\\)")
    if(v MATCHES "\"([^\"]+)\"")
      set(version " ${CMAKE_MATCH_1}")
    endif()
  endif()
  file(GLOB cuda_libs "${torch_prefix}/lib/libtorch_cuda.*" "${torch_prefix}/lib/torch_cuda.*")
  if(NOT cuda_libs)
    message(STATUS "amp-lab: CPU-only LibTorch${version} at ${torch_prefix}: no CUDA set-up needed")
    return()
  endif()
  set(${out_cuda} ON PARENT_SCOPE)

  # --- the toolkit
  set(root "")
  if(CUDA_TOOLKIT_ROOT_DIR AND "${CUDA_TOOLKIT_ROOT_DIR}" STREQUAL "${_AMP_LAB_CUDA_ROOT}")
    set(root "${CUDA_TOOLKIT_ROOT_DIR}")
    set(root_from "${_AMP_LAB_CUDA_ROOT_FROM}")  # found by an earlier configure: said the same way
  elseif(CUDA_TOOLKIT_ROOT_DIR)
    set(root "${CUDA_TOOLKIT_ROOT_DIR}")
    set(root_from "CUDA_TOOLKIT_ROOT_DIR")
  else()
    foreach(var CUDA_PATH CUDA_HOME)
      if(NOT root AND DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
        set(root "$ENV{${var}}")
        set(root_from "\$${var}")
      endif()
    endforeach()
  endif()
  if(root)
    _amp_lab_is_toolkit("${root}" ok)
    if(NOT ok)
      message(FATAL_ERROR "amp-lab: ${root_from}=${root} is not a CUDA toolkit (no include/cuda_runtime_api.h "
                          "and bin/nvcc there); point it at one, or unset it to let amp-lab look")
    endif()
  else()
    _amp_lab_is_toolkit(/usr/local/cuda ok)
    if(ok)
      set(root /usr/local/cuda)
      set(root_from "/usr/local/cuda")
    else()
      _amp_lab_toolkit_of_nvcc(root)
      set(root_from "the nvcc on PATH")
      _amp_lab_is_toolkit("${root}" ok)
      if(NOT ok)
        message(FATAL_ERROR "amp-lab: LibTorch${version} at ${torch_prefix} is a CUDA build, and building against "
                            "it needs the CUDA toolkit (nvcc and the CUDA headers), which is not in $CUDA_PATH, "
                            "$CUDA_HOME, /usr/local/cuda or on PATH: install it, or set CUDA_PATH to its folder")
      endif()
    endif()
  endif()
  get_filename_component(root "${root}" REALPATH)
  set(CUDA_TOOLKIT_ROOT_DIR "${root}" CACHE PATH "CUDA toolkit folder (found by amp-lab, cmake/AmpLabTorch.cmake)")
  set(_AMP_LAB_CUDA_ROOT "${CUDA_TOOLKIT_ROOT_DIR}" CACHE INTERNAL "")
  set(_AMP_LAB_CUDA_ROOT_FROM "${root_from}" CACHE INTERNAL "")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    set(CMAKE_CUDA_COMPILER "${root}/bin/nvcc" CACHE FILEPATH "nvcc of the CUDA toolkit (found by amp-lab)")
  endif()
  set(toolkit_version "")
  file(STRINGS "${root}/include/cuda.h" v REGEX "^#define CUDA_VERSION [0-9]+")
  if(v MATCHES "([0-9]+)$")
    math(EXPR major "${CMAKE_MATCH_1} / 1000")
    math(EXPR minor "(${CMAKE_MATCH_1} % 1000) / 10")
    set(toolkit_version " ${major}.${minor}")
  endif()

  # --- the architecture list
  if(DEFINED TORCH_CUDA_ARCH_LIST)
    set(arch_from "as set")
  elseif(DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(arch_from "from the environment")
    set(TORCH_CUDA_ARCH_LIST "$ENV{TORCH_CUDA_ARCH_LIST}")
  else()
    set(caps)
    find_program(_amp_lab_nvidia_smi nvidia-smi)
    if(_amp_lab_nvidia_smi)
      execute_process(COMMAND "${_amp_lab_nvidia_smi}" --query-gpu=compute_cap --format=csv,noheader
                      RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_QUIET TIMEOUT 30)
      if(rc EQUAL 0)
        string(REGEX MATCHALL "[0-9]+\\.[0-9]+" caps "${o}")
        list(REMOVE_DUPLICATES caps)
      endif()
    endif()
    unset(_amp_lab_nvidia_smi CACHE)
    if(caps)
      set(TORCH_CUDA_ARCH_LIST "${caps}")
      set(arch_from "the visible GPUs")
    else()
      set(TORCH_CUDA_ARCH_LIST 9.0)
      set(arch_from "no GPU visible: the default, an H200's")
    endif()
    set(TORCH_CUDA_ARCH_LIST "${TORCH_CUDA_ARCH_LIST}" PARENT_SCOPE)
  endif()
  string(REPLACE ";" " " arch_text "${TORCH_CUDA_ARCH_LIST}")

  # pip's nvidia/* packages sit beside torch in site-packages; a LibTorch archive keeps its CUDA libraries in lib/.
  get_filename_component(site "${torch_prefix}/.." ABSOLUTE)

  # --- nvrtc
  if(CUDA_nvrtc_LIBRARY AND "${CUDA_nvrtc_LIBRARY}" STREQUAL "${_AMP_LAB_NVRTC}")
    set(nvrtc_text "${CUDA_nvrtc_LIBRARY}")  # found by an earlier configure
  elseif(CUDA_nvrtc_LIBRARY)
    set(nvrtc_text "${CUDA_nvrtc_LIBRARY} (as set)")
  else()
    file(GLOB nvrtc "${root}/lib64/libnvrtc.so" "${root}/lib/libnvrtc.so" "${root}/targets/*/lib/libnvrtc.so")
    if(nvrtc)
      set(nvrtc_text "the toolkit's")  # Torch's own lookup finds it
    else()
      file(GLOB nvrtc "${site}/nvidia/*/lib/libnvrtc.so.[0-9]*" "${torch_prefix}/lib/libnvrtc-*.so.[0-9]*")
      list(FILTER nvrtc EXCLUDE REGEX "builtins|\\.alt\\.")
      if(nvrtc)
        list(GET nvrtc 0 nvrtc)
        set(CUDA_nvrtc_LIBRARY "${nvrtc}" CACHE FILEPATH "nvrtc (found by amp-lab beside LibTorch)")
        set(_AMP_LAB_NVRTC "${nvrtc}" CACHE INTERNAL "")
        set(nvrtc_text "${nvrtc}")
      else()
        message(FATAL_ERROR "amp-lab: no nvrtc library: neither ${root} nor ${site}/nvidia nor ${torch_prefix}/lib "
                            "has one; set CUDA_nvrtc_LIBRARY to a libnvrtc.so")
      endif()
    endif()
  endif()

  # --- the math-library headers
  set(math)  # folders to add after the toolkit's headers (amp_lab_use_torch_cuda_headers)
  if(EXISTS "${root}/include/cublas_v2.h" OR EXISTS "${root}/../../math_libs/include/cublas_v2.h")
    set(math_text "the toolkit's")
  else()
    file(GLOB candidates LIST_DIRECTORIES true "${site}/nvidia/*/include")
    foreach(dir IN LISTS candidates)
      foreach(h cublas_v2.h cublasLt.h cusparse.h cusolverDn.h)
        if(EXISTS "${dir}/${h}")
          list(APPEND math "${dir}")
          break()
        endif()
      endforeach()
    endforeach()
    if(math)
      string(REPLACE ";" ", " math_text "${math}")
    else()
      set(math_text "none (ATen/cuda/CUDAContext.h would not compile; amp-lab does not include it)")
    endif()
  endif()

  # --- nccl.h (c10d's NCCL backend): Torch's config adds no NCCL include folder. pip's, beside the libnccl
  # the wheel's torch links, comes before a system one (which the compiler would find by itself).
  file(GLOB nccl "${site}/nvidia/nccl/include/nccl.h" "${site}/nvidia/*/include/nccl.h")
  if(EXISTS "${root}/include/nccl.h")
    set(nccl_text "the toolkit's")
  elseif(EXISTS "${torch_prefix}/include/nccl.h")
    set(nccl_text "LibTorch's")
  elseif(nccl)
    list(GET nccl 0 nccl)
    get_filename_component(nccl "${nccl}" DIRECTORY)
    list(APPEND math "${nccl}")
    set(nccl_text "${nccl}")
  elseif(EXISTS "/usr/include/nccl.h")
    set(nccl_text "/usr/include's")
  else()
    set(nccl_text "none (amp-lab builds without c10d's NCCL backend; lab 13 uses Gloo)")
  endif()
  if(math)
    list(REMOVE_DUPLICATES math)
    set(${out_math} "${math}" PARENT_SCOPE)
  endif()

  message(STATUS "amp-lab: CUDA LibTorch${version}: toolkit${toolkit_version} at ${root} (${root_from}), "
                 "TORCH_CUDA_ARCH_LIST ${arch_text} (${arch_from}), nvrtc ${nvrtc_text}, math headers ${math_text}, "
                 "nccl.h ${nccl_text}")
endfunction()

function(amp_lab_use_torch_cuda_headers)
  if(_amp_lab_cuda_math_include AND TARGET CUDA::cudart)
    get_target_property(dirs CUDA::cudart INTERFACE_INCLUDE_DIRECTORIES)
    foreach(dir IN LISTS _amp_lab_cuda_math_include)
      list(FIND dirs "${dir}" at)
      if(at EQUAL -1)
        set_property(TARGET CUDA::cudart APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${dir}")
      endif()
    endforeach()
  endif()
endfunction()

function(amp_lab_torch_cxx_standard out)
  set(std "")
  set(from "")
  foreach(t torch torch_cpu torch_cpu_library c10)
    if(TARGET ${t})
      get_target_property(features ${t} INTERFACE_COMPILE_FEATURES)
      if(features AND features MATCHES "cxx_std_([0-9]+)")
        set(std ${CMAKE_MATCH_1})
        set(from "the ${t} target's INTERFACE_COMPILE_FEATURES")
        break()
      endif()
    endif()
  endforeach()
  if(NOT std)
    foreach(dir IN LISTS TORCH_INCLUDE_DIRS)
      if(NOT std AND EXISTS "${dir}/ATen/ATen.h")
        file(STRINGS "${dir}/ATen/ATen.h" check REGEX "__cplusplus < [0-9]+L" LIMIT_COUNT 1)
        if(check MATCHES "__cplusplus < (20[0-9][0-9])[0-9][0-9]L")
          math(EXPR std "${CMAKE_MATCH_1} - 2000")
          set(from "its ATen/ATen.h")
        endif()
      endif()
    endforeach()
  endif()
  if(NOT std)
    if(Torch_VERSION VERSION_GREATER_EQUAL 2.14)
      set(std 20)
    else()
      set(std 17)
    endif()
    set(from "its version")
  endif()
  message(STATUS "amp-lab: LibTorch ${Torch_VERSION} requires C++${std} (read from ${from})")
  set(${out} ${std} PARENT_SCOPE)
endfunction()
