// tc-analyze: reads a store. For now: what the run was and what it recorded
// (run, threads, the busiest recording sites). The findings come with the
// analysis library.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "tc/store/reader.h"

namespace {

std::string seconds(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3f s", static_cast<double>(ns) / 1e9);
  return buf;
}

std::string text_or(const tc::store::Query& q, int col, const char* fallback) {
  return q.is_null(col) ? std::string(fallback) : std::string(q.text(col));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Read a tc store (.tcdb) written by tc-profile or TC_PROFILE=, and print what the run recorded.\n\n"
               "  tc-analyze run.tcdb\n",
               "tc-analyze"};
  std::string path;
  int top = 15;
  app.add_option("store", path, "The .tcdb file")->required();
  app.add_option("--top", top, "How many recording sites to list")->capture_default_str();
  app.footer("Exit status: 0 on success; 3 no such file, 4 not a tc store, 5 truncated or damaged store, 6 store from a newer tc, 7 I/O error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  auto reader = tc::store::Reader::open(path);
  if (!reader.ok()) {
    std::fprintf(stderr, "tc-analyze: %s\n", reader.status().message().c_str());
    return static_cast<int>(reader.status().code());
  }
  const tc::store::Reader& r = *reader;
  auto run = r.query(
      "SELECT command, cwd, host, collector, clock, start_ts, end_ts, exit_code, exit_signal, complete, event_count, dropped_count, cuda, "
      "tc_version FROM run WHERE id = 1");
  if (!run.next()) {
    std::fprintf(stderr, "tc-analyze: %s: the store has no run row (%s); re-record the run\n", path.c_str(),
                 run.status().ok() ? "empty" : run.status().message().c_str());
    return 5;
  }
  std::printf("run       %s\n", std::string(run.text(0)).c_str());
  std::printf("where     %s on %s (recorded by %s, clock %s, tc %s)\n", std::string(run.text(1)).c_str(), std::string(run.text(2)).c_str(),
              std::string(run.text(3)).c_str(), std::string(run.text(4)).c_str(), std::string(run.text(13)).c_str());
  std::string ended;
  if (!run.is_null(8)) {
    ended = "killed by signal " + std::to_string(run.i64(8));
  } else if (!run.is_null(7)) {
    ended = "exited with status " + std::to_string(run.i64(7));
  } else {
    ended = "end unknown";
  }
  std::printf("ended     %s; %s\n", ended.c_str(), run.i64(9) ? "complete" : "INCOMPLETE (the program did not exit normally, or events were dropped)");
  if (!run.is_null(6)) std::printf("wall      %s\n", seconds(run.i64(6) - run.i64(5)).c_str());
  std::printf("events    %lld recorded, %lld dropped\n", static_cast<long long>(run.i64(10)), static_cast<long long>(run.i64(11)));
  std::printf("cuda      %s\n", text_or(run, 12, "-").c_str());

  std::printf("\nthreads\n  %-6s %-8s %-8s %-16s %10s %10s %10s\n", "utid", "pid", "tid", "name", "ranges", "instants", "counters");
  for (auto q = r.query("SELECT t.utid, p.pid, t.tid, t.name, "
                        "(SELECT count(*) FROM ranges WHERE utid = t.utid), (SELECT count(*) FROM instants WHERE utid = t.utid), "
                        "(SELECT count(*) FROM counters WHERE utid = t.utid) FROM threads t JOIN processes p USING (upid) ORDER BY t.utid");
       q.next();) {
    std::printf("  %-6lld %-8lld %-8lld %-16s %10lld %10lld %10lld\n", static_cast<long long>(q.i64(0)), static_cast<long long>(q.i64(1)),
                static_cast<long long>(q.i64(2)), text_or(q, 3, "-").c_str(), static_cast<long long>(q.i64(4)),
                static_cast<long long>(q.i64(5)), static_cast<long long>(q.i64(6)));
  }

  std::printf("\nbusiest recording sites\n  %-32s %-8s %10s %12s  %s\n", "name", "kind", "count", "total", "where");
  auto sites = r.query(
      "SELECT l.name, k.kind, k.n, k.total, l.file, l.line FROM ("
      " SELECT loc_id, 'range' AS kind, count(*) AS n, sum(CASE WHEN dur >= 0 THEN dur ELSE 0 END) AS total FROM ranges GROUP BY loc_id"
      " UNION ALL SELECT loc_id, 'instant', count(*), NULL FROM instants GROUP BY loc_id"
      " UNION ALL SELECT loc_id, 'counter', count(*), NULL FROM counters GROUP BY loc_id) k"
      " LEFT JOIN locations l ON l.id = k.loc_id ORDER BY k.n DESC LIMIT " +
      std::to_string(top));
  while (sites.next()) {
    std::string where = sites.is_null(4) ? "-" : std::string(sites.text(4)) + ":" + std::to_string(sites.i64(5));
    std::printf("  %-32s %-8s %10lld %12s  %s\n", text_or(sites, 0, "(unknown site)").c_str(), std::string(sites.text(1)).c_str(),
                static_cast<long long>(sites.i64(2)), sites.is_null(3) ? "" : seconds(sites.i64(3)).c_str(), where.c_str());
  }
  if (!sites.status().ok()) {
    std::fprintf(stderr, "tc-analyze: %s\n", sites.status().message().c_str());
    return 5;
  }
  return 0;
}
