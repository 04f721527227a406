// One tc-profile over a whole job, divided into a store per rank
// (collector.h: split_by_rank).
#include <map>
#include <string>
#include <vector>

#include "tc/collect/collector.h"
#include "tc/store/output.h"
#include "tc/store/writer.h"

namespace tc::collect {

StatusOr<std::vector<RankStore>> split_by_rank(const std::string& source, const std::map<int64_t, trace::launcher::Place>& places,
                                               const std::function<std::string(int)>& path_for) {
  std::map<int, std::vector<int64_t>> by_rank;  // rank -> its processes' upids
  int world = 0;
  for (const auto& [upid, place] : places) {
    if (place.rank < 0) continue;
    by_rank[place.rank].push_back(upid);
    world = std::max(world, place.size);
  }
  std::vector<RankStore> out;
  if (by_rank.empty() || world <= 1) return out;
  const int lowest = by_rank.begin()->first;
  std::vector<int64_t> ranked;  // every ranked process: the lowest rank's store takes all but the others'
  for (const auto& [rank, upids] : by_rank) {
    if (rank != lowest) ranked.insert(ranked.end(), upids.begin(), upids.end());
  }
  const auto undo = [&out] {
    for (const RankStore& s : out) store::remove_store_files(s.path);
  };
  for (const auto& [rank, upids] : by_rank) {
    RankStore store{rank, path_for(rank)};
    auto writer = store::Writer::create(store.path);
    if (!writer.ok()) {
      undo();
      return writer.status();
    }
    out.push_back(store);
    const store::ProcessSubset subset = rank == lowest ? store::ProcessSubset{ranked, true} : store::ProcessSubset{upids, false};
    Status s = (*writer)->copy_processes(source, subset);
    if (s.ok()) s = (*writer)->finalize();
    if (!s.ok()) {
      writer->reset();
      undo();
      return s;
    }
  }
  return out;
}

}  // namespace tc::collect
