// tc/trace/python_command.h: what a program's command line says about tc's
// Python hook, for tc-profile (a line at the start) and the analysis (the
// note of a run without steps). Standard library only.
//
//   if (char f = tc::trace::python_flag_without_hook(argv)) ...  // 'I', 'E' or 'S'
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace tc::trace {

// The interpreter option that keeps tc's hook (PYTHONPATH's sitecustomize)
// from loading: 'I' (isolated) and 'E' ignore PYTHONPATH, 'S' skips site; 0
// when `command` is not python* or has none of them before its script, -c or
// -m (what follows is the program's).
inline char python_flag_without_hook(const std::vector<std::string>& command) {
  if (command.empty()) return 0;
  std::string_view name(command[0]);
  if (size_t slash = name.rfind('/'); slash != std::string_view::npos) name.remove_prefix(slash + 1);
  if (!name.starts_with("python")) return 0;
  for (size_t i = 1; i < command.size(); ++i) {
    const std::string& a = command[i];
    if (a.size() < 2 || a[0] != '-' || a == "--") return 0;  // the script, stdin or the end of the options
    if (a[1] == '-') {
      if (a == "--check-hash-based-pycs") ++i;
      continue;
    }
    for (size_t k = 1; k < a.size(); ++k) {
      if (a[k] == 'I' || a[k] == 'E' || a[k] == 'S') return a[k];
      if (a[k] == 'c' || a[k] == 'm') return 0;  // the rest is the program's
      if (a[k] == 'W' || a[k] == 'X') {
        if (k + 1 == a.size()) ++i;  // its value is the next argument
        break;
      }
    }
  }
  return 0;
}

// "python -I ignores PYTHONPATH" (or -E; "python -S skips site").
inline std::string python_flag_words(char flag) {
  return std::string("python -") + flag + (flag == 'S' ? " skips site" : " ignores PYTHONPATH");
}

// Why a run of such a command has no steps: "python -I ignores PYTHONPATH,
// so tc's Python hook did not load; rerun without -I".
inline std::string python_without_hook_words(char flag) {
  return python_flag_words(flag) + ", so tc's Python hook did not load; rerun without -" + flag;
}

}  // namespace tc::trace
