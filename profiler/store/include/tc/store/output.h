// tc/store/output.h: writing a store beside its final name and moving it in.
//
//   std::string temp = tc::store::temp_beside("run.tcdb");   // ./.run.tcdb.tc-tmp-PID
//   auto w = tc::store::Writer::create(temp);  ...  w->finalize(); w.reset();
//   if (std::string why = tc::store::install(temp, "run.tcdb"); !why.empty()) ...
//
// A failed run never leaves half a store over a good one: the store is built
// under a hidden name in the output's directory (so the rename is atomic) and
// renamed over the output only when it is closed.
#pragma once

#include <string>

namespace tc::store {

// A path in output's directory that names nothing yet (nor its -wal):
// DIR/.NAME.tc-tmp-PID, with -N appended when that is taken.
std::string temp_beside(const std::string& output);

// Moves a closed store from temp to output: first the side files an old store
// left at output (SQLite would replay an old -wal into the new file), then the
// -wal the writer had to leave (a reader held the store open), then the file.
// "" on success, else why not in words (the temp store is left as it is).
// Without `replace`, an output that exists by then (another run wrote it while
// this one ran) is never replaced: the moves are no-replace renames
// (renameat2 RENAME_NOREPLACE, else link + unlink), and the answer starts
// with output + " was written by another process".
std::string install(const std::string& temp, const std::string& output, bool replace = true);

// Removes a store and its side files (-wal, -shm, -journal, -reserve).
void remove_store_files(const std::string& path);

// "a directory", "a FIFO", ... for a path that exists and is not a regular
// file; "" for a regular file or a path that does not exist. Never follows a
// last symbolic link to decide (a link to a regular file is a regular file).
std::string not_a_regular_file(const std::string& path);

}  // namespace tc::store
