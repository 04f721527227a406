// The code cache's directory and its trust rules, for every backend that
// keeps built code on disk (cache/code_cache.cpp: host objects; cuda/: cubins).
//
// Loading code means running it, so the cache trusts nothing it finds: the
// directory must be this user's alone, files are read only when they are
// regular files this user owns and only this user can write, nothing is
// opened through a link or written over, and an entry counts only when its
// SHA-256 (sha256.h) matches the record written beside it when it was built.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace tc::detail::cache {

// Where built code lives: TC_CACHE_DIR, else $XDG_CACHE_HOME/tc, else
// ~/.cache/tc; created (mode 0700) and checked that nobody but this user (and
// root) can change what is in it. The canonical path; throws tc::Error in one
// line naming what is wrong and what to set.
std::string directory();

// Held while one cache key is checked, built and moved in: an exclusive
// flock() on `path` (created 0600, never through a link), so processes that
// need the same key at once build it once. Released on destruction or when
// the process dies. One that cannot be taken is said once; then nothing is
// held.
class CacheKeyLock {
 public:
  explicit CacheKeyLock(const std::string& path);
  ~CacheKeyLock();
  CacheKeyLock(const CacheKeyLock&) = delete;
  CacheKeyLock& operator=(const CacheKeyLock&) = delete;

 private:
  int fd_ = -1;
};

// Reads, through `fd`, a regular file this user owns and only this user can
// write, of at most `limit` bytes; false with *why otherwise.
bool read_owned(int fd, std::string& out, std::size_t limit, std::string* why);
// The same for `path` (never through a link); false when it is absent too.
bool read_owned(const std::string& path, std::string& out, std::size_t limit);

// Writes a new file (never through a link, never over an existing one);
// throws tc::Error starting with `context`.
void write_new(const std::string& path, std::string_view text, const std::string& context);
// Puts `bytes` at dir/name whole or not at all (a private file renamed into
// place); a cache that cannot be written only costs a build next time.
void put(const std::string& dir, const std::string& name, std::string_view bytes);

// The record beside an entry: `kind` (its format's first line), the key it
// was built for and the SHA-256 of its bytes.
std::string record(const char* kind, const std::string& key, std::string_view bytes);

// Says a problem of the cache on stderr and in the run's warnings.
void warn(const std::string& message);

}  // namespace tc::detail::cache
