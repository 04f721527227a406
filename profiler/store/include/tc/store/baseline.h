// tc/store/baseline.h: the peer that benchmarks compare the store against.
#pragma once

#include <cstdint>
#include <string>

#include "tc/store/status.h"

namespace tc::store {

// Raw SQLite, no tc code in the loop: creates a plain database at path (WAL,
// synchronous=NORMAL, default page size), a table shaped like `ranges`
// (rowid + 6 integers), inserts `rows` rows with one prepared statement in one
// transaction, and returns rows per second (wall clock). Removes the file.
StatusOr<double> raw_insert_rate(const std::string& path, int64_t rows);

}  // namespace tc::store
