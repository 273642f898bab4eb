# Writes OUT, a C++ source with every presets/<kind>/<id>.json as a string literal.
file(GLOB_RECURSE files RELATIVE "${PRESETS_DIR}" "${PRESETS_DIR}/*.json")
list(SORT files)
set(body "")
set(count 0)
foreach(rel IN LISTS files)
  get_filename_component(kind "${rel}" DIRECTORY)
  get_filename_component(name "${rel}" NAME)
  string(REGEX REPLACE "\\.json$" "" id "${name}")  # ids may contain dots (gpt3-1.7b)
  file(READ "${PRESETS_DIR}/${rel}" text)
  string(APPEND body "    {\"${kind}\", \"${id}\", R\"POSEIDON_PRESET(${text})POSEIDON_PRESET\"},\n")
  math(EXPR count "${count} + 1")
endforeach()
file(WRITE "${OUT}.tmp" "// Generated from presets/ by core/embed_presets.cmake. Do not edit.
#include \"poseidon/presets.hpp\"

namespace poseidon {
namespace {
const PresetEntry entries[] = {
${body}};
}  // namespace
std::span<const PresetEntry> embedded_presets() { return entries; }
}  // namespace poseidon
")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
