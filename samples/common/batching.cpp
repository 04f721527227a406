#include "batching.h"

#include <algorithm>
#include <iterator>
#include <numeric>

#include "fortunes.h"
#include "tokenizer.h"

namespace tc_samples {

constexpr const char* kPaddingNames[] = {"longest", "max_length", "bucket"};  // by Padding

std::optional<Padding> parse_padding(const std::string& s) {
  if (s == "buckets") return Padding::bucket;
  for (size_t i = 0; i < std::size(kPaddingNames); ++i)
    if (s == kPaddingNames[i]) return static_cast<Padding>(i);
  return std::nullopt;
}

const char* padding_name(Padding p) {
  return static_cast<size_t>(p) < std::size(kPaddingNames) ? kPaddingNames[static_cast<size_t>(p)] : "?";
}

int64_t PaddingPolicy::length_for(int64_t longest) const {
  longest = std::max<int64_t>(longest, 1);
  switch (mode) {
    case Padding::longest: return std::min(longest, max_length);
    case Padding::max_length: return max_length;
    case Padding::bucket:
      for (int64_t b : buckets)
        if (b >= longest) return b;
      return buckets.back();
  }
  return max_length;
}

int64_t PaddingPolicy::max_positions() const {
  return mode == Padding::bucket ? buckets.back() : max_length;
}

std::optional<std::vector<int64_t>> parse_buckets(const std::string& s) {
  std::vector<int64_t> out;
  for (const auto& item : split_commas(s)) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (...) {
      return std::nullopt;
    }
    if (used != item.size() || v <= 0) return std::nullopt;
    out.push_back(v);
  }
  if (out.empty()) return std::nullopt;
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

TokenBatch make_token_batch(const std::vector<std::vector<int32_t>>& seqs,
                            const std::vector<int32_t>& labels, std::span<const std::size_t> index,
                            const PaddingPolicy& policy, int64_t pad_rows_to) {
  TokenBatch b;
  b.real_rows = static_cast<int64_t>(index.size());
  b.rows = std::max(b.real_rows, pad_rows_to);
  int64_t longest = 0;
  for (std::size_t i : index) longest = std::max<int64_t>(longest, static_cast<int64_t>(seqs[i].size()));
  b.len = policy.length_for(longest);
  b.ids.assign(static_cast<std::size_t>(b.rows * b.len), Tokenizer::kPad);
  for (int64_t r = 0; r < b.rows; ++r) {
    std::size_t i = index[r < b.real_rows ? static_cast<std::size_t>(r) : 0];
    const auto& s = seqs[i];
    int64_t n = std::min<int64_t>(static_cast<int64_t>(s.size()), b.len);
    std::copy_n(s.begin(), n, b.ids.begin() + r * b.len);
    b.labels.push_back(r < b.real_rows ? labels[i] : kIgnoreLabel);
  }
  return b;
}

std::vector<std::vector<std::size_t>> make_batches(std::size_t n, std::size_t batch_size,
                                                   bool drop_last, std::mt19937_64* gen) {
  std::vector<std::size_t> order(n);
  std::iota(order.begin(), order.end(), std::size_t{0});
  if (gen)
    for (std::size_t i = n; i > 1; --i) std::swap(order[i - 1], order[(*gen)() % i]);
  std::vector<std::vector<std::size_t>> out;
  for (std::size_t start = 0; start < n; start += batch_size) {
    std::size_t end = std::min(n, start + batch_size);
    if (end - start < batch_size && drop_last) break;
    out.emplace_back(order.begin() + static_cast<std::ptrdiff_t>(start),
                     order.begin() + static_cast<std::ptrdiff_t>(end));
  }
  return out;
}

}  // namespace tc_samples
