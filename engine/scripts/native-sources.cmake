# Writes OUT, a header with the digest of the addon's sources (SRC_DIR/*.cc, *.h). The addon exports it and the
# loader compares it with the sources beside it (engine/src/native-sources.ts computes the same digest): an addon
# built from other sources than the JavaScript that drives it is refused with a reason instead of crashing.
# Digest: SHA-256 of the lines "<file name>:<SHA-256 of the file>\n", files sorted by name.
# Usage: cmake -DSRC_DIR=engine/native -DOUT=native_sources.h -P native-sources.cmake
file(GLOB _files RELATIVE "${SRC_DIR}" "${SRC_DIR}/*.cc" "${SRC_DIR}/*.h")
list(SORT _files)
set(_all "")
foreach(_f IN LISTS _files)
  file(SHA256 "${SRC_DIR}/${_f}" _h)
  string(APPEND _all "${_f}:${_h}\n")
endforeach()
string(SHA256 _digest "${_all}")
set(_text "#pragma once\n#define MNN_EDGE_NATIVE_SOURCES \"${_digest}\"\n")
if(EXISTS "${OUT}")
  file(READ "${OUT}" _old)
  if(_old STREQUAL _text)
    return()
  endif()
endif()
file(WRITE "${OUT}" "${_text}")
