#include <algorithm>
#include <cstring>

#include "tc/collect/collector.h"

namespace tc::collect {

void HookCollectives::location(uint32_t loc, std::string_view name) {
  const std::string_view prefix = store::schema::kCollectivePrefix;
  if (name.size() > prefix.size() && name.substr(0, prefix.size()) == prefix) ops_[loc] = std::string(name.substr(prefix.size()));
}

void HookCollectives::start(int64_t upid, int64_t utid, uint32_t loc, int64_t range_id, int64_t ts) {
  if (!ops_.contains(loc)) return;
  if (open_.size() + done_.size() >= max_) {
    ++skipped_;
    return;
  }
  open_[{upid, range_id}] = {utid, ts, loc};  // an id the process reused: the later start stands
}

void HookCollectives::end(int64_t upid, int64_t range_id, int64_t ts) {
  auto it = open_.find({upid, range_id});
  if (it == open_.end()) return;  // not a collective's range
  const Open o = it->second;
  open_.erase(it);
  done_.push_back({upid, o.utid, o.ts, std::max<int64_t>(0, ts - o.ts), o.loc});
}

std::vector<HookCollectives::Row> HookCollectives::rows(
    const std::function<const std::vector<int64_t>*(int64_t upid)>& step_ends) const {
  std::vector<const Done*> sorted;
  sorted.reserve(done_.size());
  for (const Done& d : done_)
    if (!native_.contains(d.upid)) sorted.push_back(&d);
  std::sort(sorted.begin(), sorted.end(), [](const Done* a, const Done* b) { return a->upid != b->upid ? a->upid < b->upid : a->ts < b->ts; });
  std::vector<Row> out;
  out.reserve(sorted.size());
  int64_t upid = -1, seq = 0;
  const std::vector<int64_t>* ends = nullptr;
  for (const Done* d : sorted) {
    if (d->upid != upid) {
      upid = d->upid;
      seq = 0;
      ends = step_ends(upid);
    }
    const int64_t step = ends ? std::upper_bound(ends->begin(), ends->end(), d->ts) - ends->begin() : 0;
    auto op = ops_.find(d->loc);
    out.push_back({d->utid, d->ts, d->dur, step, ++seq, op == ops_.end() ? std::string() : op->second, d->loc});
  }
  return out;
}

}  // namespace tc::collect
