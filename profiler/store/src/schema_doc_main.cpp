// tc-store-schema [OUTPUT]: prints docs/schema.md, generated from the schema
// declarations, to stdout or to OUTPUT. `ninja schema-doc` runs it.
#include <cstdio>
#include <string>

#include "tc/store/schema.h"

int main(int argc, char** argv) {
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    std::fprintf(stderr, "usage: tc-store-schema [OUTPUT.md]  (prints the store schema reference)\n");
    return 2;
  }
  const std::string md = tc::store::schema_markdown();
  std::FILE* out = argc == 2 ? std::fopen(argv[1], "wb") : stdout;
  if (!out) {
    std::perror(argv[1]);
    return 1;
  }
  bool ok = std::fwrite(md.data(), 1, md.size(), out) == md.size();
  ok = (out == stdout ? std::fflush(out) : std::fclose(out)) == 0 && ok;
  if (!ok) std::fprintf(stderr, "tc-store-schema: write failed\n");
  return ok ? 0 : 1;
}
