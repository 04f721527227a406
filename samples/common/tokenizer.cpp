#include "tokenizer.h"

#include <algorithm>
#include <cctype>

namespace tc_samples {

namespace {

bool word_char(unsigned char c) { return std::isalnum(c) || c == '\'' || c >= 0x80; }

}  // namespace

std::vector<std::string> Tokenizer::split(std::string_view text) {
  std::vector<std::string> out;
  std::string cur;
  for (unsigned char c : text) {
    if (word_char(c)) {
      cur += static_cast<char>(std::tolower(c));
      continue;
    }
    if (!cur.empty()) out.push_back(cur), cur.clear();
    if (std::ispunct(c)) out.emplace_back(1, static_cast<char>(c));
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

void Tokenizer::fit(const std::vector<std::string>& texts, int64_t min_count) {
  std::unordered_map<std::string, int64_t> counts;
  for (const auto& t : texts)
    for (auto& w : split(t)) ++counts[w];
  std::vector<std::pair<std::string, int64_t>> kept;
  for (auto& [w, n] : counts)
    if (n >= min_count) kept.emplace_back(w, n);
  std::sort(kept.begin(), kept.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  words_ = {"<pad>", "<unk>"};
  ids_.clear();
  for (auto& [w, n] : kept) {
    ids_.emplace(w, static_cast<int32_t>(words_.size()));
    words_.push_back(w);
  }
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, int64_t max_tokens) const {
  std::vector<int32_t> out;
  for (auto& w : split(text)) {
    if (static_cast<int64_t>(out.size()) >= max_tokens) break;
    auto it = ids_.find(w);
    out.push_back(it == ids_.end() ? kUnk : it->second);
  }
  return out;
}

}  // namespace tc_samples
