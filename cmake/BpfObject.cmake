# bpf_object(NAME SOURCE [HEADERS...])
#   Compiles SOURCE (a CO-RE .bpf.c) with clang -target bpf, generates the
#   libbpf skeleton NAME.skel.h with bpftool, and defines the INTERFACE
#   target NAME_skel (include it, link libbpf) -- after libbpf-bootstrap's
#   FindBpfObject.cmake.  HEADERS (the shared kernel/user headers) are
#   dependencies, so the skeleton is rebuilt when they change; so is
#   usdt/jvmtrace_abi.h, on the include path of every program.
#
# vmlinux.h policy: generated once per build tree from the build machine's
# /sys/kernel/btf/vmlinux (bpftool btf dump).  CO-RE relocations make the
# objects run on other kernels with BTF; nothing kernel-specific is committed.
find_program(BPF_CLANG NAMES clang-14 clang REQUIRED)
find_program(BPFTOOL NAMES bpftool REQUIRED)
execute_process(COMMAND ${BPF_CLANG} --version OUTPUT_VARIABLE _clang_v)
string(REGEX MATCH "version ([0-9]+)" _ "${_clang_v}")
if(CMAKE_MATCH_1 LESS 11)
  message(FATAL_ERROR "BPF CO-RE needs clang >= 11, found ${CMAKE_MATCH_1} (${BPF_CLANG})")
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBBPF REQUIRED IMPORTED_TARGET GLOBAL libbpf>=1.0)

set(BPF_GEN_DIR ${CMAKE_BINARY_DIR}/bpf)
set(VMLINUX_H ${BPF_GEN_DIR}/vmlinux.h)
if(NOT EXISTS /sys/kernel/btf/vmlinux)
  message(FATAL_ERROR "this kernel has no BTF (/sys/kernel/btf/vmlinux): CO-RE programs cannot be built or loaded")
endif()
# One target owns the header: a custom command's output listed by several
# targets gets a rule in each, and a parallel build then ran two of them at
# once, one compiler reading the header while the other rewrote it (clang
# crashed mid-struct in CI).  Written to a temporary name and renamed, so no
# reader ever sees half of it.
add_custom_command(
  OUTPUT ${VMLINUX_H}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${BPF_GEN_DIR}
  COMMAND ${BPFTOOL} btf dump file /sys/kernel/btf/vmlinux format c > ${VMLINUX_H}.tmp
  COMMAND ${CMAKE_COMMAND} -E rename ${VMLINUX_H}.tmp ${VMLINUX_H}
  COMMENT "vmlinux.h from /sys/kernel/btf/vmlinux")
add_custom_target(bpf_vmlinux_h DEPENDS ${VMLINUX_H})

function(bpf_object name src)
  set(obj ${BPF_GEN_DIR}/${name}.bpf.o)
  set(skel ${BPF_GEN_DIR}/${name}.skel.h)
  set(deps ${src})
  foreach(h ${ARGN})
    list(APPEND deps ${CMAKE_CURRENT_SOURCE_DIR}/${h})
  endforeach()
  # The contract's values and records, which every program may use.
  list(APPEND deps ${PROJECT_SOURCE_DIR}/usdt/jvmtrace_abi.h)
  add_custom_command(
    OUTPUT ${obj}
    # -idirafter: asm/ headers (errno.h) that bpf/usdt.bpf.h pulls in live in
    # the multiarch directory, which -target bpf does not search.
    COMMAND ${BPF_CLANG} -g -O2 -Wall -target bpf -D__TARGET_ARCH_x86
            -I${BPF_GEN_DIR} -I${CMAKE_CURRENT_SOURCE_DIR} -I${PROJECT_SOURCE_DIR}/usdt
            -idirafter /usr/include/x86_64-linux-gnu
            -c ${CMAKE_CURRENT_SOURCE_DIR}/${src} -o ${obj}
    DEPENDS ${deps} ${VMLINUX_H}
    COMMENT "BPF ${src}")
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "skeleton ${name}.skel.h")
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_dependencies(${name}_skel_gen bpf_vmlinux_h)
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${BPF_GEN_DIR} ${CMAKE_CURRENT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/usdt)
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF)
endfunction()
