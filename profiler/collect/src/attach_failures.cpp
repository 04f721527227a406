// Reads what processes that could not attach to the rings said
// (collector.h: read_attach_failures). The file is the program's to write.
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <string_view>

#include "tc/collect/collector.h"

namespace tc::collect {

namespace {

constexpr size_t kMaxParsed = 1 << 20;
constexpr size_t kMaxField = 512;

std::string field(std::string_view text) {
  std::string out(text.substr(0, kMaxField));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  return out;
}

// "PID\tWHY\tCOMMAND"; false when the line is not that.
bool parse_line(std::string_view line, AttachFailure* f) {
  const size_t a = line.find('\t');
  if (a == std::string_view::npos || a == 0 || a > 9) return false;
  const size_t b = line.find('\t', a + 1);
  if (b == std::string_view::npos) return false;
  int64_t pid = 0;
  for (char c : line.substr(0, a)) {
    if (c < '0' || c > '9') return false;
    pid = pid * 10 + (c - '0');
  }
  if (pid <= 0 || b == a + 1) return false;
  f->pid = pid;
  f->why = field(line.substr(a + 1, b - a - 1));
  f->command = field(line.substr(b + 1));
  return true;
}

}  // namespace

AttachFailures read_attach_failures(const std::string& path) {
  AttachFailures out;
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return out;
  std::string text;
  char buf[65536];
  bool partial = false;  // text holds the start of a line that has not ended yet
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n <= 0) break;
    for (ssize_t i = 0; i < n; ++i) {
      const char c = buf[i];
      if (c != '\n') {
        if (text.size() < kMaxParsed) text.push_back(c);
        partial = true;
        continue;
      }
      AttachFailure f;
      if (out.named.size() < kMaxNamedAttachFailures && text.size() < kMaxParsed && parse_line(text, &f)) {
        out.named.push_back(std::move(f));
      } else {
        ++out.unnamed;
      }
      text.clear();
      partial = false;
    }
  }
  if (partial) ++out.unnamed;  // a last line cut short (its writer was killed mid-write, or the file was scribbled)
  ::close(fd);
  return out;
}

}  // namespace tc::collect
