// tc-analyze's own queries over a store, kept apart so that a test can
// check their plans (EXPLAIN QUERY PLAN) without linking the tool.
#pragma once

#include <string_view>

namespace tc::cli {

// `tc-analyze recompiles`: every compilation by ts, with its shape changes
// (the compilation_inputs of its graph_id, in id order, joined by ", ") and
// its diff. The inputs are grouped once and joined (SQLite builds an
// automatic index on graph_id): no subquery per compilation, which scanned
// compilation_inputs once per row (113 s for 50k compilations).
// Columns: ts, graph_id, step, reason, dur, changes (NULL if none), diff.
inline constexpr std::string_view kCompilationsSql =
    "SELECT c.ts, c.graph_id, c.step, c.reason, c.dur, i.changes, c.diff FROM compilations c LEFT JOIN "
    "(SELECT graph_id, group_concat(input || '[' || dim || '] ' || old_value || '->' || new_value, ', ') AS changes "
    "FROM (SELECT graph_id, input, dim, old_value, new_value FROM compilation_inputs ORDER BY graph_id, id) GROUP BY graph_id) i "
    "ON i.graph_id = c.graph_id ORDER BY c.ts, c.id";

}  // namespace tc::cli
